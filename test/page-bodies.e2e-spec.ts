import request from 'supertest';
import { BodyPool } from '../src/common/body-pool.js';
import { addDays } from '../src/common/clock.js';
import { MetricsService } from '../src/metrics/metrics.service.js';
import { importVisits, startVisitsApp, type VisitsApp } from './helpers/visits-fixture.js';

/** The raw body bytes of a supertest response, decoded from gzip when it came so. */
function rawBody(res: request.Response, done: (error: Error | null, body: Buffer) => void): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => done(null, Buffer.concat(chunks)));
}

/**
 * With the page cache off, every page is rendered into a buffer of the pool and the buffer is
 * written into again once its response has closed (BodyPool). Many concurrent requests for
 * different pages, some of them compressed (the compression reads the body off the event
 * loop), must each get exactly the bytes of their own page, as when asked for alone.
 */
describe(`page bodies written into buffers used again (${process.env.TEST_DATABASE})`, () => {
  let app: VisitsApp;

  beforeAll(async () => {
    app = await startVisitsApp({ VISITS_CACHE_MB: '0' });
    // Visits of about 8 KB, each naming itself throughout, so that pages of 20 lie in pooled buffers (over 64 KB).
    const records = Array.from({ length: 90 }, (_, i) => {
      const visitId = 700_000 + i;
      const date = addDays(app.today, -(2 + (i % 25)));
      return {
        visitId,
        clientId: 1001,
        brandId: 5,
        branchId: 'B-1',
        visitType: 'MV',
        questionnaireType: 'Mystery Visit - Dinner',
        visitScore: 60,
        recommendScore: 7,
        recommendComment: `visit ${visitId}`,
        visitDateTime: `${date}T10:${String(i % 60).padStart(2, '0')}:00`,
        modificationDate: `${date}T23:00:00`,
        visitSource: 'Web',
        sections: [{ name: 'Notes', score: 50, questions: [{ subject: 'Notes', score: null, analysisTag: null, category: null, dish: null, answer: `visit ${visitId} `.repeat(600) }] }],
        guestId: null,
        optIns: null,
        completedAt: null,
      };
    });
    await importVisits(app.t, records);
  });
  afterAll(async () => {
    await app.t.close();
  });

  it('gives every one of many concurrent requests the bytes of its own page, compressed or not', async () => {
    const { t, today, partner, token } = app;
    const path = (skip: number): string =>
      `/visits/plus?SvcClientId=1001&FromDate=${addDays(today, -30)}&ToDate=${addDays(today, -1)}&Skip=${skip}&Take=20`;
    const get = (skip: number, encoding: string) =>
      request(t.http)
        .get(path(skip))
        .set('svc-api-key', partner.apiKey)
        .set('Authorization', `Bearer ${token}`)
        .set('Accept-Encoding', encoding)
        .buffer(true)
        .parse(rawBody);
    const skips = Array.from({ length: 9 }, (_, i) => i * 20);
    const alone: Buffer[] = [];
    for (const skip of skips) {
      const res = await get(skip, 'identity');
      expect(res.status).toBe(200);
      alone.push(res.body as Buffer);
    }
    expect(alone.filter((body) => body.length > 64 * 1024).length).toBeGreaterThanOrEqual(4);
    const pool = t.app.get(BodyPool);

    for (let round = 0; round < 3; round++) {
      const asked = skips.flatMap((skip, i) => ['identity', 'gzip'].map((encoding) => ({ i, encoding, res: get(skip, encoding).then((r) => r) })));
      for (const { i, encoding, res } of asked) {
        const answer = await res;
        expect(answer.status).toBe(200);
        expect(answer.headers['content-encoding']).toBe(encoding === 'gzip' ? 'gzip' : undefined);
        expect((answer.body as Buffer).equals(alone[i])).toBe(true);
      }
    }
    // The buffers went back to the pool once their responses had closed; the metrics show what it keeps.
    expect(pool.freeBytes).toBeGreaterThan(0);
    const metrics = await t.app.get(MetricsService).registry.metrics();
    expect(metrics).toContain(`\nresults_page_body_pool_bytes ${pool.freeBytes}\n`);
  });
});
