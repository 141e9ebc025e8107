import { jest } from '@jest/globals';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DataSource } from 'typeorm';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays } from '../src/common/clock.js';
import { Visit as VisitEntity } from '../src/visits/entities/visit.entity.js';
import { VisitsRepository } from '../src/visits/visits.repository.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import { cliJson } from './helpers/cli.js';
import type { TestApp } from './helpers/test-app.js';
import { importBranches, type FeedPage as Feed, importVisits, startVisitsApp, type VisitRecord } from './helpers/visits-fixture.js';

interface Visit {
  visitId: number;
  brandName: string | null;
  branchCode: string | null;
  modificationDate: string;
  visitScore: number;
}
type FeedPage = Feed<Visit>;

/** A branch that an import moves to another brand takes its visits along: they are never left with the old brand's credentials. */
describe(`a branch moved to another brand (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let visits: VisitRecord[];
  let today: string;
  let partner: IssuedCredential;
  let token: string;
  const dir = mkdtempSync(join(tmpdir(), 'branch-brand-move-'));
  const credentials: Record<'five' | 'six', { c: IssuedCredential; bearer: string }> = {} as never;

  beforeAll(async () => {
    ({ t, visits, today, partner, token } = await startVisitsApp());
    for (const [name, brand] of [['five', 5], ['six', 6]] as const) {
      const c = await issueCredential(t, { brands: [brand] });
      credentials[name] = { c, bearer: await tokenFor(t.http, c) };
    }
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  const get = (path: string, who?: 'five' | 'six') => {
    const [c, bearer] = who ? [credentials[who].c, credentials[who].bearer] : [partner, token];
    return request(t.http).get(path).set('svc-api-key', c.apiKey).set('Authorization', `Bearer ${bearer}`);
  };
  const branchFile = (rows: unknown[]): string => {
    const file = join(dir, `branches-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(rows));
    return file;
  };
  const window = (): string => `FromDate=${addDays(today, -31)}&ToDate=${addDays(today, -1)}&Skip=0&Take=1000`;
  const listed = async (who: 'five' | 'six'): Promise<Visit[]> => {
    const res = await get(`/visits/standard?SvcClientId=1001&${window()}`, who);
    expect(res.status).toBe(200);
    return (res.body as { data: { visits: Visit[] } }).data.visits;
  };
  /** The branches a credential lists, as the answer gives them. */
  const branches = async (who: 'five' | 'six'): Promise<{ id: string; name: string; branchCode: string | null }[]> => {
    const res = await get('/branches?SvcClientId=1001', who);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    return res.body as { id: string; name: string; branchCode: string | null }[];
  };
  const bath = { id: 'B-7', name: 'Bath', branchCode: 'BTH' };
  const feed = async (after: string, who: 'five' | 'six'): Promise<FeedPage> => {
    const res = await get(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(after)}`, who);
    expect(res.status).toBe(200);
    return res.body as FeedPage;
  };
  /** The end of a credential's feed: the token after its last page. */
  const feedEnd = async (who: 'five' | 'six'): Promise<string> => {
    const since = new Date(Date.now() - 3600_000).toISOString();
    let res = await get(`/visits/standard/changes?SvcClientId=1001&Since=${since}&Take=1000`, who);
    for (;;) {
      expect(res.status).toBe(200);
      const body = res.body as FeedPage;
      if (body.data.visits.length === 0 && (body.data.removed ?? []).length === 0) return body.paging.after;
      res = await get(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(body.paging.after)}`, who);
    }
  };

  it('moves the branch and its visits to the new brand: listed, named and fed to its credentials, removed from the old brand', async () => {
    // A branch of this test's own, in brand 5, with three visits in the window.
    const report = await importBranches(t, 1001, branchFile([{ id: 'B-7', name: 'Bath', branchCode: 'BTH', brandId: 5 }]));
    expect(report).toMatchObject({ imported: 1, rejected: [] });
    const template = visits.find((v) => v.brandId === 5)!;
    const own = [1, 2, 3].map((n) => ({ ...template, visitId: 890_000 + n, branchId: 'B-7', brandId: 5, visitDateTime: `${addDays(today, -n)}T10:00:00` }));
    await importVisits(t, own);
    const ownIds = own.map((v) => v.visitId);
    const before = (await listed('five')).filter((v) => ownIds.includes(v.visitId));
    expect(before.map((v) => [v.visitId, v.brandName, v.branchCode])).toEqual(
      [3, 2, 1].map((n) => [890_000 + n, 'Acme Grill', 'BTH']),
    );
    expect((await listed('six')).filter((v) => ownIds.includes(v.visitId))).toEqual([]);
    expect(await branches('five')).toContainEqual(bath);
    expect(await branches('six')).not.toContainEqual(bath);
    const ends = { five: await feedEnd('five'), six: await feedEnd('six') };

    // The operator's command moves it to brand 6.
    const moved = await cliJson<{ imported: number; rejected: unknown[] }>(
      ['branches', 'import', '--client', '1001', branchFile([{ id: 'B-7', name: 'Bath', branchCode: 'BTH', brandId: 6 }])],
      t.env,
    );
    expect(moved).toMatchObject({ imported: 1, rejected: [] });

    // Brand 6 lists the branch and its visits, named after brand 6; brand 5 neither.
    const after = (await listed('six')).filter((v) => ownIds.includes(v.visitId));
    expect(after.map((v) => [v.visitId, v.brandName, v.branchCode, v.visitScore])).toEqual(
      before.map((v) => [v.visitId, 'Acme Pizzeria', 'BTH', v.visitScore]),
    );
    // Its brandName changed: a partner syncing by modificationDate learns of it.
    after.forEach((v, i) => expect(v.modificationDate > before[i].modificationDate).toBe(true));
    expect((await listed('five')).filter((v) => ownIds.includes(v.visitId))).toEqual([]);
    expect(await branches('five')).not.toContainEqual(bath);
    expect(await branches('six')).toContainEqual(bath);

    // The feeds: brand 5's reports the visits removed, brand 6's brings them as visits; nothing else moved.
    const five = await feed(ends.five, 'five');
    expect([five.data.visits, five.data.removed?.map((r) => r.visitId).sort()]).toEqual([[], [...ownIds].sort()]);
    const six = await feed(ends.six, 'six');
    expect([six.data.visits.map((v) => v.visitId).sort(), six.data.removed]).toEqual([[...ownIds].sort(), []]);

    // The same import again moves nothing.
    const again = await importBranches(t, 1001, branchFile([{ id: 'B-7', name: 'Bath', branchCode: 'BTH', brandId: 6 }]));
    expect(again).toMatchObject({ imported: 1, rejected: [] });
    const still = await feed(six.paging.after, 'six');
    expect([still.data.visits, still.data.removed]).toEqual([[], []]);
  });

  it('moves a branch out of every brand: its visits lose their brand and every brand-restricted credential loses them', async () => {
    const template = visits.find((v) => v.brandId === 6)!;
    await importBranches(t, 1001, branchFile([{ id: 'B-8', name: 'Wells', branchCode: null, brandId: 6 }]));
    await importVisits(t, [{ ...template, visitId: 891_001, branchId: 'B-8', brandId: 6, visitDateTime: `${addDays(today, -2)}T09:00:00` }]);
    expect((await listed('six')).map((v) => v.visitId)).toContain(891_001);
    await importBranches(t, 1001, branchFile([{ id: 'B-8', name: 'Wells', branchCode: null, brandId: null }]));
    expect((await listed('six')).map((v) => v.visitId)).not.toContain(891_001);
    const all = await get(`/visits/standard?SvcClientId=1001&${window()}`);
    expect((all.body as { data: { visits: Visit[] } }).data.visits.find((v) => v.visitId === 891_001)).toMatchObject({ brandName: null });
    // And a visit of the branch imported now comes without a brand, as the branch is.
    const refused = await importVisits(t, [{ ...template, visitId: 891_002, branchId: 'B-8', brandId: 6 }]).catch((error: Error) => error.message);
    expect(refused).toMatch(/brand/);
  });

  it("writes a visit with its branch's brand as committed when written, whatever brand the import read before a move", async () => {
    // As a visits import that read branch B-7 in brand 5 just before the first test's move to 6 committed.
    const repo = t.app.get(DataSource).getRepository(VisitEntity);
    const stale = await repo.findOneByOrFail({ id: 890_001 });
    const end = await feedEnd('five');
    await t.app.get(VisitsRepository).upsertBatch([Object.assign(stale, { brandId: 5, visitScore: 33.5 })]);
    expect(await repo.findOneByOrFail({ id: 890_001 })).toMatchObject({ brandId: 6, visitScore: 33.5 });
    expect((await listed('six')).find((v) => v.visitId === 890_001)).toMatchObject({ brandName: 'Acme Pizzeria', visitScore: 33.5 });
    expect((await listed('five')).map((v) => v.visitId)).not.toContain(890_001);
    const five = await feed(end, 'five');
    expect([five.data.visits, five.data.removed]).toEqual([[], []]);
  });

  it("brings along visits left in another brand than their branch's (by an earlier release, or two imports at once) when the branch is imported again", async () => {
    const template = visits.find((v) => v.brandId === 5)!;
    await importBranches(t, 1001, branchFile([{ id: 'B-6', name: 'Ely', branchCode: 'ELY', brandId: 5 }]));
    await importVisits(t, [{ ...template, visitId: 892_001, branchId: 'B-6', brandId: 5, visitDateTime: `${addDays(today, -3)}T08:00:00` }]);
    // The branch moved to brand 6 without its visit, as a branches import of an earlier release left it.
    const db = t.app.get(DataSource);
    await db.query(`UPDATE branches SET brand_id = 6 WHERE id = ${t.config.usesPostgres ? '$1' : '?'}`, ['B-6']);
    expect((await listed('five')).map((v) => v.visitId)).toContain(892_001);
    const end = await feedEnd('five');
    // The same file again: nothing about the branch changes, its visit follows it.
    const report = await importBranches(t, 1001, branchFile([{ id: 'B-6', name: 'Ely', branchCode: 'ELY', brandId: 6 }]));
    expect(report).toMatchObject({ imported: 1, rejected: [] });
    expect((await listed('five')).map((v) => v.visitId)).not.toContain(892_001);
    expect((await listed('six')).find((v) => v.visitId === 892_001)).toMatchObject({ brandName: 'Acme Pizzeria' });
    const five = await feed(end, 'five');
    expect([five.data.visits, five.data.removed]).toEqual([[], [{ visitId: 892_001 }]]);
  });
  it("writes nothing for what is stored already: a re-import of the client's branches, or its own name again, keeps every page's ETag", async () => {
    const db = t.app.get(DataSource);
    const page = `/visits/standard?SvcClientId=1001&${window()}`;
    const held = await get(page);
    expect(held.status).toBe(200);
    const rows = await db.query<{ id: string; name: string; branchCode: string | null; brandId: number | null }[]>(
      'SELECT id, name, branch_code AS "branchCode", brand_id AS "brandId" FROM branches WHERE client_id = 1001 ORDER BY id',
    );
    expect(rows.length).toBeGreaterThan(0);
    // Nothing to write again, so no time to date it by: the database's clock is not read (a
    // round trip per branch of the file on PostgreSQL, where a branch costs one query otherwise).
    const clock = jest.spyOn(t.app.get(VisitsRepository), 'writeTime');
    const report = await importBranches(t, 1001, branchFile(rows));
    expect(clock).not.toHaveBeenCalled();
    clock.mockRestore();
    expect(report).toMatchObject({ imported: rows.length, rejected: [] });
    const [client] = await db.query<{ name: string }[]>('SELECT name FROM clients WHERE id = 1001');
    await cliJson(['clients', 'add', '--id', '1001', '--name', client.name], t.env);
    expect((await get(page).set('If-None-Match', held.headers.etag)).status).toBe(304);
    // A change is a change: one branch renamed moves the ETag.
    await importBranches(t, 1001, branchFile([{ ...rows[0], name: `${rows[0].name} (renamed)` }]));
    const moved = await get(page).set('If-None-Match', held.headers.etag);
    expect(moved.status).toBe(200);
    expect(moved.headers.etag).not.toBe(held.headers.etag);
    await importBranches(t, 1001, branchFile([rows[0]]));
  });
});
