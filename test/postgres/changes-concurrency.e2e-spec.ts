import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import { addDays, localDate } from '../../src/common/clock.js';
import { spawnCli } from '../helpers/cli.js';
import { issueCredential, tokenFor } from '../helpers/auth.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { branchVisit, seedOneBranch } from '../helpers/visits-fixture.js';

interface Visit {
  visitId: number;
  visitScore: number;
  recommendComment: string | null;
}
interface FeedPage {
  data: { visits: Visit[] };
  paging: { after: string };
}

const PER_WRITER = 3000;

/**
 * Two importer processes write one client's visits at once, on PostgreSQL, in transactions of
 * 500, rewriting visits the other writes too; meanwhile a partner follows the change feed. When
 * the writers are done and the partner has read to the end, what it saw of each visit is the
 * visit's final state: no write was passed over, whichever transaction committed first.
 */
describe('change feed under concurrent imports (postgres, two processes)', () => {
  let t: TestApp;
  const dir = mkdtempSync(join(tmpdir(), 'changes-concurrency-'));

  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_SECONDS: '0' });
    await seedOneBranch(t);
  });
  afterAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    await t.close();
  });

  /** A writer's file: visits `from`..`from + PER_WRITER`, then (later batches) the first ones again, changed. */
  function writerFile(name: string, from: number, day: string): string {
    const records = [];
    for (let i = 0; i < PER_WRITER; i++) {
      // The last third rewrites the first third's ids: one writer changes its own visits again.
      const id = i < (PER_WRITER * 2) / 3 ? from + i : from + i - (PER_WRITER * 2) / 3;
      records.push(
        branchVisit(id, day, {
          visitScore: (i % 97) + 0.5,
          recommendComment: `${name} ${i}`,
          visitDateTime: `${day}T${String(10 + (i % 12)).padStart(2, '0')}:00:00`,
          modificationDate: `${day}T23:00:00`,
        }),
      );
    }
    const file = join(dir, `${name}.ndjson`);
    writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n'));
    return file;
  }

  it('lets a reader following the feed see the final state of every visit', async () => {
    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const get = (path: string) => request(t.http).get(path).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    const day = addDays(localDate(t.config.RESULTS_TIMEZONE), -2);

    const first = await get(`/visits/standard/changes?SvcClientId=1001&Since=${new Date(Date.now() - 60_000).toISOString()}`);
    expect(first.status).toBe(200);
    let after = (first.body as FeedPage).paging.after;
    const seen = new Map<number, Visit>();
    const readPage = async (): Promise<number> => {
      const res = await get(`/visits/standard/changes?SvcClientId=1001&Take=200&after=${encodeURIComponent(after)}`);
      expect(res.status).toBe(200);
      const body = res.body as FeedPage;
      for (const v of body.data.visits) seen.set(v.visitId, v);
      after = body.paging.after;
      return body.data.visits.length;
    };

    // Half of each writer's ids are the other's too.
    const files = [writerFile('a', 1, day), writerFile('b', 1 + PER_WRITER / 3, day)];
    let running = files.length;
    const writers = files.map(async (file) => {
      const result = await spawnCli(['visits', 'import', file], t.env);
      running--;
      return result;
    });
    let pagesDuringWrites = 0;
    while (running > 0) {
      await readPage();
      pagesDuringWrites++;
    }
    for (const result of await Promise.all(writers)) expect(result.code).toBe(0);
    while ((await readPage()) > 0);

    const final = new Map<number, Visit>();
    for (let skip = 0; ; skip += 1000) {
      const res = await get(`/visits/standard?SvcClientId=1001&FromDate=${day}&ToDate=${day}&Skip=${skip}&Take=1000`);
      expect(res.status).toBe(200);
      const visits = (res.body as FeedPage).data.visits;
      for (const v of visits) final.set(v.visitId, v);
      if (visits.length < 1000) break;
    }
    // Writer a has ids 1..2000, writer b 1001..3000.
    expect(final.size).toBe(PER_WRITER);
    expect(pagesDuringWrites).toBeGreaterThan(0);
    expect(seen.size).toBe(final.size);
    for (const [id, visit] of final) expect([id, seen.get(id)]).toEqual([id, visit]);
  });
});
