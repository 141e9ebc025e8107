import request from 'supertest';
import { DataSource } from 'typeorm';
import { addDays, localDate, localDateTime } from '../../src/common/clock.js';
import { issueCredential, tokenFor } from '../helpers/auth.js';
import { restoreSystemClock, withSystemClockOff } from '../helpers/system-clock.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { branchVisit, importVisits, seedOneBranch, type FeedPage } from '../helpers/visits-fixture.js';

/**
 * Writers whose clocks disagree with the others' (an operator's command on a host ten minutes
 * behind, a replica an hour ahead), on one PostgreSQL database: what partners see is ordered and
 * dated by the database, not by the writer's clock.
 */
describe('writers with clocks off (postgres)', () => {
  let t: TestApp;
  const day = (): string => addDays(localDate(t.config.RESULTS_TIMEZONE), -1);
  const visit = (visitId: number) => branchVisit(visitId, day());

  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_SECONDS: '0' });
    await seedOneBranch(t);
  });
  afterAll(async () => {
    restoreSystemClock();
    await t.close();
  });

  it('gives a change feed started with Since the visits a writer whose clock is behind wrote after it', async () => {
    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const since = new Date().toISOString();
    // Written after Since, by a writer whose clock reads ten minutes earlier (past the five minutes' margin).
    await withSystemClockOff(-10 * 60_000, () => importVisits(t, [visit(5001), visit(5002)]));
    const res = await request(t.http)
      .get(`/visits/standard/changes?SvcClientId=1001&Since=${encodeURIComponent(since)}&Take=100`)
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
    expect((res.body as FeedPage<{ visitId: number }>).data.visits.map((v) => v.visitId)).toEqual([5001, 5002]);
  });

  it('dates a changed re-import from a writer whose clock is an hour behind by the database clock, as the visits written before it', async () => {
    await importVisits(t, [visit(5101)]);
    const before = localDateTime(t.config.RESULTS_TIMEZONE).slice(0, 16);
    await withSystemClockOff(-3_600_000, () => importVisits(t, [{ ...visit(5101), visitScore: 81 }]));
    const after = localDateTime(t.config.RESULTS_TIMEZONE);
    const [row] = await t.app.get(DataSource).query<{ m: string }[]>('SELECT modification_date AS m FROM visits WHERE id = $1', [5101]);
    // Moved forward to now as the database reads it, not to an hour ago (a second past the stored date).
    expect(row.m >= before && row.m <= after).toBe(true);
  });
});
