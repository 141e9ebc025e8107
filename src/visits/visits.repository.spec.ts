import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { loadConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import type { WebhookOutbox } from '../webhooks/webhook-outbox.js';
import { Visit } from './entities/visit.entity.js';
import { NameFragments, PageWriter, StaleNames, type ClientNames } from './visit-json.js';
import { visitDocument, VisitsRepository } from './visits.repository.js';

/** SQLite's page queries, which write a page's visits in SQL, on the schema the migrations make. */
describe('VisitsRepository on SQLite', () => {
  let dir: string;
  let db: DataSource;
  const statements: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'visits-repository-'));
    db = await new DataSource(dataSourceOptions(loadConfig({ DATA_DIR: dir }))).initialize();
    await db.runMigrations();
    // The statements the repository prepares for the pages it writes in SQL.
    const connection = (db.driver as unknown as { databaseConnection: Database }).databaseConnection;
    const prepare = connection.prepare.bind(connection);
    connection.prepare = ((sql: string) => {
      statements.push(sql);
      return prepare(sql);
    });
  });

  afterAll(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** A page writer with the names given, or no names at all. */
  const writer = (plus: boolean, names?: ClientNames): PageWriter =>
    new PageWriter(new NameFragments(names ?? { clientId: 0, clientName: '', brands: new Map(), branches: new Map() }), plus, 0);

  /** The steps of the statement's query plan, with every parameter 1. */
  async function plan(sql: string): Promise<string[]> {
    const params = Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 1);
    const rows = await db.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${sql}`, params);
    return rows.map((row) => row.detail);
  }

  it.each([
    ['a page from the start of a range', { after: undefined, brandIds: null, visitTypes: null }],
    ['a page after a mark, of some brands and types', { after: { visitDateTime: '2026-10-01T10:00:00', id: 5 }, brandIds: [1, 2], visitTypes: ['MV'] }],
  ])('reads %s in page order without sorting the documents', async (_, selection) => {
    statements.length = 0;
    const repo = new VisitsRepository(db, {} as WebhookOutbox);
    await repo.page({ clientId: 1, from: '2026-10-01', until: '2026-11-01', skip: 3, take: 100, plus: true, ...selection }, writer(true));
    expect(statements).toHaveLength(1);
    const steps = await plan(statements[0]);
    // The page's ids from the index alone, in their order, as the outer loop; then each document by its key.
    expect(steps[0]).toMatch(/^CO-ROUTINE page/);
    expect(steps[1]).toMatch(/SEARCH visits USING COVERING INDEX ix_visits_client_time/);
    expect(steps.slice(2)).toEqual(['SCAN page', expect.stringMatching(/^SEARCH d USING INDEX sqlite_autoindex_visit_documents_1 \(visit_id=\?\)$/)]);
    expect(steps.filter((step) => step.includes('TEMP B-TREE'))).toEqual([]);
    expect(statements[0]).toMatch(/CROSS JOIN visit_documents d ON d\.visit_id = page\.id$/);
  });

  it('reads a page of the change feed in write order without sorting the documents', async () => {
    statements.length = 0;
    const repo = new VisitsRepository(db, {} as WebhookOutbox);
    await repo.changes({ clientId: 1, after: 10, brandIds: [3], visitTypes: null, take: 500, plus: false }, writer(false));
    expect(statements).toHaveLength(1);
    const steps = await plan(statements[0]);
    expect(steps[0]).toMatch(/^CO-ROUTINE page/);
    expect(steps[1]).toMatch(/SEARCH visits USING (COVERING )?INDEX ix_visits_client_change/);
    expect(steps.slice(2)).toEqual(['SCAN page', expect.stringMatching(/^SEARCH d USING INDEX sqlite_autoindex_visit_documents_1 \(visit_id=\?\)$/)]);
    expect(steps.filter((step) => step.includes('TEMP B-TREE'))).toEqual([]);
  });

  describe('pages written in SQL', () => {
    const outbox = { recordVisitChanges: () => Promise.resolve() } as unknown as WebhookOutbox;
    let repo: VisitsRepository;
    let names: ClientNames;
    /** Visits of client 2 in the order of their pages: by visitDateTime, then id. */
    let visits: Visit[];

    beforeAll(async () => {
      await db.query(`INSERT INTO clients (id, name) VALUES (2, 'Client "two" é')`);
      await db.query(`INSERT INTO brands (id, client_id, name) VALUES (20, 2, 'Brand\\ 😀')`);
      await db.query(
        `INSERT INTO branches (id, client_id, brand_id, name, branch_code) VALUES ('B1', 2, 20, 'Ünï "one"', 'C-1'), ('B2', 2, NULL, 'two', NULL)`,
      );
      const comments = ['', null, 'Line\nbreak "quoted" \\ é 中文 😀', 'plain', '\u2028\u0001'];
      visits = Array.from({ length: 40 }, (_, i) =>
        Object.assign(new Visit(), {
          id: 1000 - i * 7,
          clientId: 2,
          brandId: i % 3 === 0 ? null : 20,
          branchId: i % 2 === 0 ? 'B1' : 'B2',
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

    /** The body PageWriter.add writes for these visits, from their documents as a write renders them. */
    function expected(page: Visit[], plus: boolean, after?: string): Buffer {
      const expectedPage = writer(plus, names);
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
      return expectedPage.finish(after);
    }

    it.each([false, true])('writes the bytes the page writer writes from the rows, in page order (plus: %s)', async (plus) => {
      const selection = { clientId: 2, from: '2026-10-01', until: '2026-11-01', brandIds: null, visitTypes: null };
      for (const [skip, take] of [
        [0, 40],
        [5, 7],
        [39, 10],
        [40, 10],
      ]) {
        const page = writer(plus, names);
        await repo.page({ ...selection, skip, take, plus }, page);
        expect(page.count).toBe(Math.max(0, Math.min(take, 40 - skip)));
        expect(page.finish().equals(expected(visits.slice(skip, skip + take), plus))).toBe(true);
      }
      // Filtered in the index: the visits of brand 20 of type MV or TA, after a position.
      const after = { visitDateTime: visits[3].visitDateTime, id: visits[3].id };
      const filtered = visits.slice(4).filter((v) => v.brandId === 20 && ['MV', 'TA'].includes(v.visitType));
      const page = writer(plus, names);
      await repo.page({ ...selection, brandIds: [20], visitTypes: ['MV', 'TA'], after, skip: 1, take: 5, plus }, page);
      expect(page.finish().equals(expected(filtered.slice(1, 6), plus))).toBe(true);
    });

    it('writes a page of the change feed in write order and gives its last sequence number', async () => {
      const bySequence = [...visits].sort((a, b) => a.changeSeq - b.changeSeq);
      const first = bySequence[0].changeSeq;
      const page = writer(false, names);
      expect(await repo.changes({ clientId: 2, after: first + 2, brandIds: null, visitTypes: null, take: 10, plus: false }, page)).toBe(first + 12);
      expect(page.finish('t').equals(expected(bySequence.slice(3, 13), false, 't'))).toBe(true);
      const empty = writer(true, names);
      expect(await repo.changes({ clientId: 2, after: first + 39, brandIds: null, visitTypes: null, take: 10, plus: true }, empty)).toBeNull();
      expect(empty.finish('t').toString()).toBe('{"data":{"visits":[]},"paging":{"after":"t"}}');
    });

    it('stops at a visit whose branch the names do not know, and reads again afterwards', async () => {
      const selection = { clientId: 2, from: '2026-10-01', until: '2026-11-01', brandIds: null, visitTypes: null, skip: 0, take: 40, plus: false };
      const withoutB2 = { ...names, branches: new Map([...names.branches].filter(([id]) => id !== 'B2')) };
      const stale = writer(false, withoutB2);
      await expect(repo.page(selection, stale)).rejects.toBeInstanceOf(StaleNames);
      expect(stale.count).toBe(0);
      const page = writer(false, names);
      await repo.page(selection, page);
      expect(page.finish().equals(expected(visits, false))).toBe(true);
    });
  });
});
