import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { DemoService } from '../src/demo/demo.service.js';
import { tokenFor } from './helpers/auth.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

interface Visit {
  visitId: number;
  visitType: string;
  modificationDate: string;
}
interface FeedPage {
  data: { visits: Visit[] };
  paging: { after: string };
}

/** The demo data set gives the change feed something to show: mystery visits re-scored after the first import. */
describe(`the demo data in the change feed (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  const base = mkdtempSync(join(tmpdir(), 'results-demo-'));

  beforeAll(async () => {
    // A DATA_DIR that does not exist yet (on PostgreSQL nothing else makes it): the credentials file is still written.
    // 45 days of demo visits: more than one page of 1000 for the first client (about 1,300), in half the time of 90.
    t = await startTestApp({ DATA_DIR: join(base, 'not', 'yet'), DEMO_DAYS: '45' });
    await t.app.get(DemoService).load();
  });
  afterAll(async () => {
    await t.close();
    rmSync(base, { recursive: true, force: true });
  });

  it('ends with re-scored MV visits, each once, at their new modificationDate', async () => {
    const demo = (await t.app.get(DemoService).readCredentials())!.credentials[0];
    const token = await tokenFor(t.http, demo);
    const seen: Visit[] = [];
    let path = `/visits/standard/changes?SvcClientId=${demo.clients[0]}&Take=1000&Since=${new Date(Date.now() - 3600_000).toISOString()}`;
    for (;;) {
      const res = await request(t.http).get(path).set('svc-api-key', demo.apiKey).set('Authorization', `Bearer ${token}`);
      expect(res.status).toBe(200);
      const body = res.body as FeedPage;
      if (body.data.visits.length === 0) break;
      seen.push(...body.data.visits);
      path = `/visits/standard/changes?SvcClientId=${demo.clients[0]}&Take=1000&after=${encodeURIComponent(body.paging.after)}`;
    }
    expect(seen.length).toBeGreaterThan(1000);
    expect(new Set(seen.map((v) => v.visitId)).size).toBe(seen.length);
    // The reviews were written last: the feed's last visits are the client's three latest MV visits (the ones the
    // demo re-scores), whose modificationDate moved to the review: in write order, not in the order of the visits.
    const reviewed = seen.slice(-3);
    const before = seen.slice(0, -3);
    const latestFirstImport = before.map((v) => v.modificationDate).sort().at(-1)!;
    for (const v of reviewed) {
      expect(v.visitType).toBe('MV');
      expect(v.modificationDate >= latestFirstImport).toBe(true);
    }
    const byId = (a: number, b: number): number => a - b;
    const mysteryVisits = seen.filter((v) => v.visitType === 'MV').map((v) => v.visitId);
    expect(reviewed.map((v) => v.visitId).sort(byId)).toEqual(mysteryVisits.sort(byId).slice(-3));
  });
});
