import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { syncVisits, type SyncOptions } from '../examples/sync-visits.js';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays } from '../src/common/clock.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import { startListeningTestApp, type TestApp } from './helpers/test-app.js';
import { importVisits, seedVisits, type VisitRecord } from './helpers/visits-fixture.js';

/**
 * The README's partner script (examples/sync-visits.ts, on the generated client): a first run
 * copies every visit, a later run after imports resumes from the stored token, and the copy
 * then holds each visit exactly as the API serves it now.
 */
describe(`the partner sync script of the README (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let base: string;
  let partner: IssuedCredential;
  let visits: VisitRecord[];
  let today: string;
  const dir = mkdtempSync(join(tmpdir(), 'partner-sync-'));

  beforeAll(async () => {
    ({ t, base } = await startListeningTestApp());
    ({ visits, today } = await seedVisits(t));
    partner = await issueCredential(t, { scopes: ['visits/standard.read'] });
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  it('copies every visit, then resumes from its token and takes in only what changed', async () => {
    const options: SyncOptions = {
      baseUrl: base,
      apiKey: partner.apiKey,
      clientId: partner.clientId,
      clientSecret: partner.clientSecret,
      svcClientId: 1001,
      since: new Date(Date.now() - 3600_000).toISOString(),
      copyFile: join(dir, 'visits.json'),
      tokenFile: join(dir, 'visits.token'),
      take: 25,
    };
    const own = visits.filter((v) => v.clientId === 1001);
    expect(await syncVisits(options)).toBe(own.length);
    const firstToken = readFileSync(options.tokenFile, 'utf8');
    expect(firstToken.length).toBeGreaterThan(10);

    const changed = [{ ...own[3], visitScore: 1.5 }, { ...own[40], recommendComment: 'Revised' }];
    await importVisits(t, [...changed, own[7]]);
    expect(await syncVisits(options)).toBe(2);
    expect(await syncVisits(options)).toBe(0);

    // The copy is what the API serves now, visit by visit.
    const copy = JSON.parse(readFileSync(options.copyFile, 'utf8')) as Record<string, unknown>;
    const token = await tokenFor(t.http, partner);
    const served: Record<string, unknown> = {};
    for (const [from, to] of [[40, 20], [19, 1]] as const) {
      const res = await request(t.http)
        .get(`/visits/standard?SvcClientId=1001&FromDate=${addDays(today, -from)}&ToDate=${addDays(today, -to)}&Skip=0&Take=1000`)
        .set('svc-api-key', partner.apiKey)
        .set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(200);
      for (const v of (res.body as { data: { visits: { visitId: number }[] } }).data.visits) served[v.visitId] = v;
    }
    expect(copy).toEqual(served);
    expect((copy[own[3].visitId] as { visitScore: number }).visitScore).toBe(1.5);
  });

  it("keeps a restricted credential's copy to what it may read when a visit moves to another brand", async () => {
    const restricted = await issueCredential(t, { scopes: ['visits/standard.read'], brands: [5] });
    const options: SyncOptions = {
      baseUrl: base,
      apiKey: restricted.apiKey,
      clientId: restricted.clientId,
      clientSecret: restricted.clientSecret,
      svcClientId: 1001,
      since: new Date(Date.now() - 3600_000).toISOString(),
      copyFile: join(dir, 'brand-5.json'),
      tokenFile: join(dir, 'brand-5.token'),
      take: 25,
    };
    const own = visits.filter((v) => v.clientId === 1001);
    const five = own.filter((v) => v.brandId === 5);
    await syncVisits(options);
    const six = own.find((v) => v.brandId === 6)!;
    const moved = five[2];
    await importVisits(t, [{ ...moved, brandId: 6, branchId: six.branchId }]);
    expect(await syncVisits(options)).toBe(0);

    const copy = JSON.parse(readFileSync(options.copyFile, 'utf8')) as Record<string, { brandName: string }>;
    expect(copy[moved.visitId]).toBeUndefined();
    expect(Object.keys(copy)).toHaveLength(five.length - 1);
    expect(new Set(Object.values(copy).map((v) => v.brandName))).toEqual(new Set(['Acme Grill']));
    await importVisits(t, [moved]);
  });
});

describe('the README', () => {
  it('shows the partner script exactly as examples/sync-visits.ts has it, types imported from the generated file', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const script = readFileSync(new URL('../examples/sync-visits.ts', import.meta.url), 'utf8');
    expect(readme).toContain(`\`\`\`ts\n${script.replace("'../test/generated/results-api.js'", "'./results-api.js'")}\`\`\``);
  });
});
