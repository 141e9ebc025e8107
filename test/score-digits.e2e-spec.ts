import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { ClientsService } from '../src/clients/clients.service.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { branchVisit, importBranches, importVisits, seedOneBranch, type FeedPage } from './helpers/visits-fixture.js';

/**
 * Scores whose shortest decimal form has 16 or 17 significant digits, on a PostgreSQL database
 * or role that sets extra_float_digits to 0: the server then sends double precision columns in
 * 15 digits, and read back they were other numbers than the ones stored. A re-import of the
 * same file counted each such visit as changed, and a visit written again from its row (its
 * branch moved to another brand) was served with its scores rounded. On SQLite, the same
 * answers.
 */
const postgres = process.env.TEST_DATABASE === 'postgres';

function withOptions(options: string): string {
  const url = new URL(process.env.DATABASE_URL!);
  url.searchParams.set('options', options);
  return url.toString();
}

const DAY = '2024-03-10';
const SCORES: [number, number][] = [
  [12.345678901234567, 3.0000000000000004],
  [99.99999999999999, 9.999999999999998],
  [0.30000000000000004, 0.1],
  [33.333333333333336, 6.666666666666667],
];
const RECORDS = SCORES.map(([visitScore, recommendScore], i) => branchVisit(i + 1, DAY, { visitScore, recommendScore }));

/** A visit of the plus page as the records above give it, of `brandName`, last modified at `modificationDate`. */
function served(i: number, brandName: string, modificationDate: unknown): Record<string, unknown> {
  const [visitScore, recommendScore] = SCORES[i];
  return {
    visitId: i + 1,
    clientId: 1001,
    clientName: 'Acme Dining',
    brandName,
    branchId: 'B-1',
    branchCode: 'LDS-01',
    branchName: 'Leeds',
    visitType: 'MV',
    questionnaireType: 'Mystery Visit',
    visitScore,
    recommendScore,
    recommendComment: `visit ${i + 1}`,
    visitDateTime: `${DAY}T12:00:00`,
    modificationDate,
    visitSource: 'Web',
    sections: [],
    guestId: null,
    optIns: { contactByEmail: null, joinMarketing: null },
  };
}

describe('scores with every digit of a double, whatever the database sets extra_float_digits to', () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;
  const get = (path: string): request.Test => request(t.http).get(path).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);

  beforeAll(async () => {
    // The URL's own options stand for what a database or role sets (ALTER ROLE … SET extra_float_digits = 0).
    t = await startTestApp(postgres ? { DATABASE_URL: withOptions('-c extra_float_digits=0') } : {});
    await seedOneBranch(t);
    await t.app.get(ClientsService).addBrand(1001, 6, 'Acme Pizzeria');
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('changes nothing when the same file is imported again, and serves the scores as imported after the branch moves brand', async () => {
    const since = new Date(Date.now() - 60_000).toISOString();
    await importVisits(t, RECORDS);
    const first = await get(`/visits/plus/changes?SvcClientId=1001&Since=${since}&Take=100`);
    expect(first.status).toBe(200);
    const firstBody = first.body as FeedPage<{ visitId: number }>;
    expect(firstBody.data.visits.map((v) => v.visitId)).toEqual([1, 2, 3, 4]);

    await importVisits(t, RECORDS);
    const again = await get(`/visits/plus/changes?SvcClientId=1001&after=${encodeURIComponent(firstBody.paging.after)}&Take=100`);
    expect(again.status).toBe(200);
    expect(again.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(again.headers['cache-control']).toBe('no-store');
    expect(again.body).toEqual({ data: { visits: [], removed: [] }, paging: { after: expect.any(String) as unknown } });

    const page = `/visits/plus?SvcClientId=1001&FromDate=${DAY}&ToDate=${DAY}&Skip=0&Take=10`;
    const before = await get(page);
    expect(before.status).toBe(200);
    expect(before.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(before.headers['cache-control']).toBe('private, no-cache');
    expect(before.body).toEqual({ data: { visits: SCORES.map((_, i) => served(i, 'Acme Grill', `${DAY}T12:30:00`)) } });

    // The branch moves to brand 6: its visits are written again, from their rows, with a later modificationDate.
    const file = join(mkdtempSync(join(tmpdir(), 'score-digits-')), 'branches.json');
    writeFileSync(file, JSON.stringify([{ id: 'B-1', name: 'Leeds', branchCode: 'LDS-01', brandId: 6 }]));
    expect((await importBranches(t, 1001, file)).rejected).toEqual([]);
    const after = await get(page);
    expect(after.status).toBe(200);
    expect(after.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(after.headers['cache-control']).toBe('private, no-cache');
    const moved = (after.body as { data: { visits: { modificationDate: string }[] } }).data.visits;
    expect(moved.map((v) => v.modificationDate > `${DAY}T12:30:00`)).toEqual([true, true, true, true]);
    expect(after.body).toEqual({ data: { visits: moved.map((v, i) => served(i, 'Acme Pizzeria', v.modificationDate)) } });
  });
});
