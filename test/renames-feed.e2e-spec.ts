import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import request from 'supertest';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { ClientDataVersions } from '../src/clients/data-versions.js';
import { ClientsService } from '../src/clients/clients.service.js';
import { addDays } from '../src/common/clock.js';
import { VisitNames } from '../src/visits/visit-names.service.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import type { TestApp } from './helpers/test-app.js';
import { importBranches, type FeedPage as Feed, startVisitsApp, type VisitRecord } from './helpers/visits-fixture.js';

interface Visit {
  visitId: number;
  clientName: string;
  brandName: string | null;
  branchName: string;
  branchCode: string | null;
  modificationDate: string;
  visitScore: number;
}
type FeedPage = Feed<Visit>;

/**
 * The names in a visit are its client's, brand's and branch's: a rename changes every visit
 * that shows the name, and a copy kept from the change feed must learn of it, as of any change.
 */
describe(`a client, brand or branch renamed (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let visits: VisitRecord[];
  let today: string;
  let partner: IssuedCredential;
  let token: string;
  let after: string;
  const dir = mkdtempSync(join(tmpdir(), 'renames-feed-'));

  beforeAll(async () => {
    ({ t, visits, today, partner, token } = await startVisitsApp());
    after = await readToEnd(`Since=${new Date(Date.now() - 3600_000).toISOString()}`).then((r) => r.after);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  const get = (path: string) => request(t.http).get(path).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
  /** The feed from a point to its end: the visits of every page, and the token after the last one. */
  async function readToEnd(from: string): Promise<{ visits: Visit[]; after: string }> {
    const seen: Visit[] = [];
    let query = from;
    for (;;) {
      const res = await get(`/visits/standard/changes?SvcClientId=1001&Take=50&${query}`);
      expect(res.status).toBe(200);
      const page = res.body as FeedPage;
      expect(page.data.removed ?? []).toEqual([]);
      seen.push(...page.data.visits);
      query = `after=${encodeURIComponent(page.paging.after)}`;
      if (page.data.visits.length === 0) return { visits: seen, after: page.paging.after };
    }
  }
  /** What the feed brought since the last call, and the window's visits as the visits endpoint gives them now, by id. */
  async function changes(): Promise<{ fed: Visit[]; listed: Map<number, Visit> }> {
    const read = await readToEnd(`after=${encodeURIComponent(after)}`);
    after = read.after;
    const res = await get(`/visits/standard?SvcClientId=1001&FromDate=${addDays(today, -31)}&ToDate=${addDays(today, -1)}&Skip=0&Take=1000`);
    expect(res.status).toBe(200);
    return { fed: read.visits, listed: new Map((res.body.data.visits as Visit[]).map((v) => [v.visitId, v])) };
  }
  const idsOf = (filter: (v: VisitRecord) => boolean): number[] =>
    visits
      .filter((v) => v.clientId === 1001 && filter(v))
      .map((v) => v.visitId)
      .sort((a, b) => a - b);
  const branchFile = (rows: unknown[]): string => {
    const file = join(dir, `branches-${Math.random().toString(36).slice(2)}.json`);
    writeFileSync(file, JSON.stringify(rows));
    return file;
  };

  /** The feed brought exactly these visits, each as the visits endpoint now gives it, with the new name and a later modificationDate. */
  function expectFed(fed: Visit[], ids: number[], listed: Map<number, Visit>, shows: Partial<Visit>): void {
    expect(fed.map((v) => v.visitId).sort((a, b) => a - b)).toEqual(ids);
    for (const visit of fed) {
      expect(visit).toMatchObject(shows);
      const record = visits.find((v) => v.visitId === visit.visitId)!;
      expect(visit.modificationDate > (record.modificationDate as string)).toBe(true);
      if (listed.has(visit.visitId)) expect(visit).toEqual(listed.get(visit.visitId));
    }
  }

  it("brings a renamed brand's visits again, with its new name, and nothing when the name is given unchanged", async () => {
    await t.app.get(ClientsService).addBrand(1001, 6, 'Acme Pizzeria & Bar');
    const { fed, listed } = await changes();
    expectFed(fed, idsOf((v) => v.brandId === 6), listed, { brandName: 'Acme Pizzeria & Bar' });
    await t.app.get(ClientsService).addBrand(1001, 6, 'Acme Pizzeria & Bar');
    expect((await changes()).fed).toEqual([]);
  });

  it("brings a branch's visits again when the import gives it another name or code, and not another branch's", async () => {
    const report = await importBranches(
      t,
      1001,
      branchFile([
        { id: 'B-1', name: 'Leeds', branchCode: 'LDS-02', brandId: 5 },
        { id: 'B-2', name: 'York', branchCode: null, brandId: 6 },
      ]),
    );
    expect(report).toMatchObject({ imported: 2, rejected: [] });
    const { fed, listed } = await changes();
    expectFed(fed, idsOf((v) => v.branchId === 'B-1'), listed, { branchName: 'Leeds', branchCode: 'LDS-02' });
    await importBranches(t, 1001, branchFile([{ id: 'B-2', name: 'York Minster', branchCode: null, brandId: 6 }]));
    const renamed = await changes();
    expectFed(renamed.fed, idsOf((v) => v.branchId === 'B-2'), renamed.listed, { branchName: 'York Minster', brandName: 'Acme Pizzeria & Bar' });
  });

  it('writes a renamed brand\'s visits with the new name on a page read while this replica still takes the version of before (a notification not yet come)', async () => {
    // A page read now keeps the names of the current version.
    expect((await changes()).fed).toEqual([]);
    const versions = t.app.get(ClientDataVersions);
    const before = await versions.current(1001);
    await t.app.get(ClientsService).addBrand(1001, 6, 'Acme Pizzeria Late');
    // The version as a replica whose notification lags gives it: the one its names were read for.
    const lagging = jest.spyOn(versions, 'current').mockResolvedValue(before);
    try {
      const read = await readToEnd(`after=${encodeURIComponent(after)}`);
      after = read.after;
      expect(read.visits.map((v) => v.visitId).sort((a, b) => a - b)).toEqual(idsOf((v) => v.brandId === 6));
      // Every one with the new name: the token passes them, so none comes again to correct it.
      expect(new Set(read.visits.map((v) => v.brandName))).toEqual(new Set(['Acme Pizzeria Late']));
    } finally {
      lagging.mockRestore();
    }
  });

  it('answers a 503 to retry, not a page with names of before, while the names keep changing under every reading of it', async () => {
    const names = t.app.get(VisitNames);
    const read = names.read.bind(names);
    let renames = 0;
    // Each reading of the names finds another client name, as renames one after another would.
    const changing = jest.spyOn(names, 'read').mockImplementation(async (clientId) => ({ ...(await read(clientId)), clientName: `Renamed ${++renames}` }));
    try {
      const res = await get(`/visits/standard/changes?SvcClientId=1001&Take=50&after=${encodeURIComponent(after)}`);
      expect({ status: res.status, retryAfter: res.headers['retry-after'], detail: (res.body as { detail: string }).detail }).toEqual({
        status: 503,
        retryAfter: '1',
        detail: "The client's names are being changed; retry after the time in Retry-After.",
      });
    } finally {
      changing.mockRestore();
    }
    // Once they stop changing, the same token reads on.
    expect((await get(`/visits/standard/changes?SvcClientId=1001&Take=50&after=${encodeURIComponent(after)}`)).status).toBe(200);
  });

  it("brings every visit of a renamed client again, and none of another client's", async () => {
    await t.app.get(ClientsService).addClient(1001, 'Acme Dining Group');
    const { fed, listed } = await changes();
    expectFed(fed, idsOf(() => true), listed, { clientName: 'Acme Dining Group' });
    // Client 1002's one visit, written when it was imported, keeps its place and its date.
    const theirs = await issueCredential(t, { clients: [1002] });
    const other = await request(t.http)
      .get(`/visits/standard/changes?SvcClientId=1002&Take=50&Since=${new Date(Date.now() - 3600_000).toISOString()}`)
      .set('svc-api-key', theirs.apiKey)
      .set('Authorization', `Bearer ${await tokenFor(t.http, theirs)}`);
    expect(other.status).toBe(200);
    const record = visits.find((v) => v.visitId === 99001)!;
    expect((other.body as FeedPage).data.visits.map((v) => [v.visitId, v.clientName, v.modificationDate])).toEqual([[99001, 'Other Group', record.modificationDate]]);
  });
});
