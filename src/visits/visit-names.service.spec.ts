import { renderVisitDocument, StaleNames, type ClientNames, type DocumentRow } from './visit-json.js';
import { VisitNames } from './visit-names.service.js';
import type { VisitsRepository } from './visits.repository.js';
import { BodyPool } from '../common/body-pool.js';

const fields = {
  visitType: 'MV',
  questionnaireType: 'Q',
  visitScore: 90,
  recommendScore: null,
  recommendComment: null,
  visitDateTime: '2026-10-01T10:00:00',
  modificationDate: '2026-10-02T10:00:00',
  visitSource: null,
  sections: '[]',
  guestId: null,
  optInContactByEmail: null,
  optInJoinMarketing: null,
};
const document = renderVisitDocument(fields);
const row = (id: number, branch: string): DocumentRow => ({ id, brand_id: null, branch_id: branch, standard: document.standard.toString('utf8'), plus: document.plus.toString('utf8') });

/** Names that know the branches given. */
const namesOf = (...branches: string[]): ClientNames => ({
  clientId: 7,
  clientName: 'Acme',
  brands: new Map(),
  branches: new Map(branches.map((id) => [id, { code: null, name: `Branch ${id}` }])),
});

/** A repository whose names are, read after read, those listed (the last one from then on). */
function repository(...reads: ClientNames[]) {
  let count = 0;
  const repo = { names: () => Promise.resolve(reads[Math.min(count++, reads.length - 1)]) };
  return { repo: repo as unknown as VisitsRepository, reads: () => count };
}

const visitIds = (body: Buffer): number[] => (JSON.parse(body.toString()) as { data: { visits: { visitId: number }[] } }).data.visits.map((v) => v.visitId);

describe('VisitNames', () => {
  it('reads the names once per data version and writes every row read into the page', async () => {
    const { repo, reads } = repository(namesOf('A', 'B'));
    const names = new VisitNames(repo, new BodyPool(8 * 1024 * 1024));
    const read = (page: { add(row: DocumentRow): void }) => {
      [row(1, 'A'), row(2, 'B')].forEach((r) => page.add(r));
      return Promise.resolve(undefined);
    };
    const { body } = await names.render(7, 1, false, 100, read);
    expect(visitIds(body)).toEqual([1, 2]);
    expect(JSON.parse(body.toString()).data.visits[1]).toMatchObject({ visitId: 2, clientName: 'Acme', branchId: 'B', branchName: 'Branch B' });
    expect(visitIds((await names.render(7, 1, true, 100, read)).body)).toEqual([1, 2]);
    expect(reads()).toBe(1);
    await names.render(7, 2, false, 100, read);
    expect(reads()).toBe(2);
  });

  it('keeps one reading of the names per client, of its latest version, however many versions were asked for', async () => {
    const { repo, reads } = repository(namesOf('A'));
    const names = new VisitNames(repo, new BodyPool(8 * 1024 * 1024));
    const read = (page: { add(row: DocumentRow): void }) => {
      page.add(row(1, 'A'));
      return Promise.resolve(undefined);
    };
    // Every import moves the client's version: readings of the versions before are never asked for again.
    for (let version = 1; version <= 50; version++) await names.render(7, version, false, 10, read);
    await names.render(8, 1, false, 10, read);
    expect(names.kept).toBe(2);
    expect(reads()).toBe(51);
    // The latest version's reading is used again; one of an earlier version is read again.
    await names.render(7, 50, true, 10, read);
    expect(reads()).toBe(51);
    await names.render(7, 49, false, 10, read);
    expect(reads()).toBe(52);
    expect(names.kept).toBe(2);
    // ...without taking the place of the latest version's, which is used again.
    await names.render(7, 50, false, 10, read);
    expect(reads()).toBe(52);
  });

  it('reads the names and the page again when a visit has a branch they do not know, and closes the page with the token given', async () => {
    // The branch C appears while the page is read: the first two reads of the names miss it.
    const { repo, reads } = repository(namesOf('A'), namesOf('A'), namesOf('A', 'C'));
    let pageReads = 0;
    const { body } = await new VisitNames(repo, new BodyPool(8 * 1024 * 1024)).render(7, 1, false, 10, (page) => {
      pageReads++;
      page.add(row(1, 'A'));
      page.add(row(2, 'C'));
      return Promise.resolve({ removed: [], after: 'token' });
    });
    expect(visitIds(body)).toEqual([1, 2]);
    expect(JSON.parse(body.toString()).paging).toEqual({ after: 'token' });
    expect([reads(), pageReads]).toEqual([3, 3]);
  });

  it('gives up after three reads of the names that never know the branch', async () => {
    const { repo, reads } = repository(namesOf('A'));
    const render = new VisitNames(repo, new BodyPool(8 * 1024 * 1024)).render(7, 1, false, 10, (page) => {
      page.add(row(1, 'GONE'));
      return Promise.resolve(undefined);
    });
    await expect(render).rejects.toThrow(StaleNames);
    expect(reads()).toBe(3);
  });

  it('passes on any other failure of the page read at once', async () => {
    const { repo, reads } = repository(namesOf('A'));
    await expect(new VisitNames(repo, new BodyPool(8 * 1024 * 1024)).render(7, 1, false, 10, () => Promise.reject(new Error('disk I/O error')))).rejects.toThrow('disk I/O error');
    expect(reads()).toBe(1);
  });
});
