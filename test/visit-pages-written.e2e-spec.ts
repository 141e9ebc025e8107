import type { DataSource } from 'typeorm';
import { openDataSource } from '../src/database/migration-tools.js';
import type { WebhookOutbox } from '../src/webhooks/webhook-outbox.js';
import { Visit } from '../src/visits/entities/visit.entity.js';
import { NameFragments, PageWriter, StaleNames, type ClientNames, type FeedEnd } from '../src/visits/visit-json.js';
import { visitDocument, VisitsRepository, type VisitPageQuery } from '../src/visits/visits.repository.js';
import { isolatedConfig } from './helpers/test-config.js';

/**
 * The repository's page and feed reads, written by the page writer, are the pages of the same
 * visits and names rendered from the visits themselves: the documents stored by a write, the
 * names read with `names` (quoted as JSON.stringify quotes them: quotes, backslashes, control
 * characters, U+2028, astral characters), in page order, on both databases.
 */
describe(`visit pages written by the repository (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  const outbox = { recordVisitChanges: () => Promise.resolve() } as unknown as WebhookOutbox;
  let db: DataSource;
  let repo: VisitsRepository;
  let names: ClientNames;
  /** Visits of client 2 in the order of their pages: by visitDateTime, then id. */
  let visits: Visit[];
  const odd = '"quoted" \\ back\tslash\n\u0001\u001f\u007f\u2028 é 中文 😀';

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    const p = (n: number): string => (db.options.type === 'postgres' ? `$${n}` : '?');
    await db.query(`INSERT INTO clients (id, name) VALUES (2, ${p(1)}), (3, 'Other')`, [`Client ${odd}`]);
    await db.query(`INSERT INTO brands (id, client_id, name) VALUES (20, 2, ${p(1)}), (30, 3, 'Theirs')`, [`Brand ${odd}`]);
    await db.query(
      `INSERT INTO branches (id, client_id, brand_id, name, branch_code) VALUES
        ('B1', 2, NULL, ${p(1)}, ${p(2)}), ('B2', 2, 20, 'two', NULL), ('B3', 2, 20, '', ''), ('X1', 3, 30, 'theirs', 'X')`,
      [`Branch ${odd}`, `C-${odd}`],
    );
    const comments = ['', null, odd, 'plain'];
    visits = Array.from({ length: 40 }, (_, i) =>
      Object.assign(new Visit(), {
        id: 1000 - i * 7,
        clientId: 2,
        // Each branch's brand, as a write gives it.
        brandId: i % 3 === 0 ? null : 20,
        branchId: ['B1', 'B2', 'B3'][i % 3],
        visitType: ['MV', 'OF', 'TA'][i % 3],
        questionnaireType: 'Dinner',
        visitScore: i + 0.5,
        recommendScore: i % 4 === 0 ? null : i % 11,
        recommendComment: comments[i % comments.length],
        visitDate: '2026-10-05',
        // Several visits at the same time: the id orders them.
        visitDateTime: `2026-10-05T1${i % 4}:00:00`,
        modificationDate: '2026-10-06T09:00:00',
        visitSource: i % 2 ? null : 'app',
        sections: JSON.stringify([{ name: `S ${i} ✓`, score: i, questions: [] }]),
        guestId: i % 5 ? `g-${i}` : null,
        optInContactByEmail: i % 3 === 0 ? null : i % 2 === 0,
        optInJoinMarketing: i % 2 === 0,
        completedAt: null,
      }),
    );
    repo = new VisitsRepository(db, outbox);
    await repo.upsertBatch(visits);
    visits.sort((a, b) => (a.visitDateTime < b.visitDateTime ? -1 : a.visitDateTime > b.visitDateTime ? 1 : a.id - b.id));
    names = (await repo.names(2))!;
  });

  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  const writer = (plus: boolean, withNames: ClientNames = names): PageWriter => new PageWriter(new NameFragments(withNames), plus, 0);

  /** A page as the service reads it: the repository's rows written by a page writer. */
  async function read(q: VisitPageQuery, page: PageWriter = writer(q.plus)): Promise<PageWriter> {
    await repo.page(q, (row) => page.add(row));
    return page;
  }

  /** The body PageWriter.add writes for these visits, from their documents as a write renders them. */
  function expected(page: Visit[], plus: boolean, feed?: FeedEnd): Buffer {
    const expectedPage = writer(plus);
    for (const visit of page) {
      const document = visitDocument(visit);
      expectedPage.add({
        id: visit.id,
        brand_id: visit.brandId,
        branch_id: visit.branchId,
        standard: document.standard.toString('utf8'),
        plus: document.plus.toString('utf8'),
      });
    }
    return expectedPage.finish(feed);
  }

  it('give the names exactly as stored, quoted so that a JSON parser reads them back', async () => {
    const page = await read({ clientId: 2, from: '2026-10-01', until: '2026-11-01', brandIds: null, visitTypes: null, skip: 0, take: 40, plus: false });
    const parsed = JSON.parse(page.finish().toString('utf8')) as { data: { visits: Record<string, unknown>[] } };
    // Visits of B1 have no brand; those of B2 and B3 are of brand 20.
    const of = (branch: string) => parsed.data.visits.filter((v) => v.branchId === branch);
    expect(of('B1').length).toBeGreaterThan(0);
    for (const v of of('B1')) expect(v).toMatchObject({ clientId: 2, clientName: `Client ${odd}`, brandName: null, branchName: `Branch ${odd}`, branchCode: `C-${odd}` });
    expect(of('B2').length).toBeGreaterThan(0);
    for (const v of of('B2')) expect(v).toMatchObject({ clientName: `Client ${odd}`, brandName: `Brand ${odd}`, branchName: 'two', branchCode: null });
    expect(of('B3').length).toBeGreaterThan(0);
    for (const v of of('B3')) expect(v).toMatchObject({ brandName: `Brand ${odd}`, branchName: '', branchCode: '' });
  });

  it.each([false, true])('give the rows of a page in page order, as the page writer writes them from the visits (plus: %s)', async (plus) => {
    const selection = { clientId: 2, from: '2026-10-01', until: '2026-11-01', brandIds: null, visitTypes: null };
    for (const [skip, take] of [
      [0, 40],
      [5, 7],
      [39, 10],
      [40, 10],
      [0, 201],
      [5, 1000],
      [40, 1000],
    ]) {
      const page = await read({ ...selection, skip, take, plus });
      expect(page.count).toBe(Math.max(0, Math.min(take, 40 - skip)));
      expect(page.finish().toString('utf8')).toBe(expected(visits.slice(skip, skip + take), plus).toString('utf8'));
    }
    // Filtered in the index: the visits of brand 20 of type OF or TA, after a position.
    const after = { visitDateTime: visits[3].visitDateTime, id: visits[3].id };
    const filtered = visits.slice(4).filter((v) => v.brandId === 20 && ['OF', 'TA'].includes(v.visitType));
    expect(filtered.length).toBeGreaterThan(6);
    const page = await read({ ...selection, brandIds: [20], visitTypes: ['OF', 'TA'], after, skip: 1, take: 5, plus });
    expect(page.finish().equals(expected(filtered.slice(1, 6), plus))).toBe(true);
  });

  it('give a page of the change feed in write order', async () => {
    // Numbers, whatever the driver gave back for the bigint.
    const bySequence = [...visits].sort((a, b) => Number(a.changeSeq) - Number(b.changeSeq));
    const first = Number(bySequence[0].changeSeq);
    const feed = async (after: number, take: number, plus: boolean): Promise<{ page: PageWriter; last: number | null }> => {
      const page = writer(plus);
      let last: number | null = null;
      await repo.changes({ clientId: 2, after, brandIds: null, visitTypes: null, take, plus }, (row) => {
        page.add(row);
        last = Number(row.change_seq);
      });
      return { page, last };
    };
    const some = await feed(first + 2, 10, true);
    expect(some.last).toBe(first + 12);
    const end = { removed: [], after: 't' };
    expect(some.page.finish(end).equals(expected(bySequence.slice(3, 13), true, end))).toBe(true);
    const rest = await feed(first + 30, 500, false);
    expect(rest.last).toBe(first + 39);
    expect(rest.page.finish(end).equals(expected(bySequence.slice(31), false, end))).toBe(true);
    const none = await feed(first + 39, 10, false);
    expect(none.last).toBeNull();
    expect(none.page.finish(end).toString()).toBe('{"data":{"visits":[],"removed":[]},"paging":{"after":"t"}}');
  });

  it('write re-imported visits under their own ids, whatever their order in the batch', async () => {
    // Visits that exist already, not in id order, of different branches: each comes back re-scored.
    const again = [visits[5], visits[30], visits[1], visits[22], visits[9]].map((v, i) => Object.assign(new Visit(), { ...v, visitScore: 90 + i }));
    const ids = again.map((v) => v.id);
    await repo.upsertBatch(again);
    // The batch's visits keep their own ids.
    expect(again.map((v) => v.id)).toEqual(ids);
    const stored = await db.query<{ visit_id: number | string; branch_id: string; v_branch: string }[]>(
      `SELECT d.visit_id, d.branch_id, v.branch_id AS v_branch FROM visit_documents d JOIN visits v ON v.id = d.visit_id`,
    );
    expect(stored.filter((row) => row.branch_id !== row.v_branch)).toEqual([]);
    const updated = visits.map((v) => again.find((a) => a.id === v.id) ?? v);
    const page = await read({ clientId: 2, from: '2026-10-01', until: '2026-11-01', brandIds: null, visitTypes: null, skip: 0, take: 40, plus: true });
    const body = page.finish();
    expect(body.equals(expected(updated, true))).toBe(true);
    const scores = (JSON.parse(body.toString('utf8')) as { data: { visits: { visitId: number; visitScore: number }[] } }).data.visits;
    for (const [i, visit] of again.entries()) expect(scores.find((v) => v.visitId === visit.id)?.visitScore).toBe(90 + i);
    await repo.upsertBatch(visits.map((v) => Object.assign(new Visit(), v)));
  });

  it('stop at a visit whose branch is not among the names, and read again afterwards', async () => {
    const selection = { clientId: 2, from: '2026-10-01', until: '2026-11-01', brandIds: null, visitTypes: null, skip: 0, take: 40, plus: false };
    // The names read before, without B2 (added since, say).
    const withoutB2 = { ...names, branches: new Map([...names.branches].filter(([id]) => id !== 'B2')) };
    await expect(read(selection, writer(false, withoutB2))).rejects.toBeInstanceOf(StaleNames);
    const page = await read(selection);
    expect(page.finish().equals(expected(visits, false))).toBe(true);
  });
});
