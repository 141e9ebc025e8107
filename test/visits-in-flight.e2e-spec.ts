import { EventEmitter } from 'node:events';
import { connect, type AddressInfo } from 'node:net';
import type { ServerResponse } from 'node:http';
import request from 'supertest';
import { addDays } from '../src/common/clock.js';
import { PageTokens } from '../src/common/page-token.js';
import { PagesInFlight } from '../src/visits/pages-in-flight.js';
import { expectedIds, startVisitsApp, type VisitsApp } from './helpers/visits-fixture.js';

/**
 * With a page budget far below what concurrent requests ask for (PAGES_IN_FLIGHT_MB=1, each
 * Take=50 page reserved at 200 KB before it is read), requests wait their turn: every one is
 * answered, with the same page it gets alone, and none is lost waiting.
 */
describe(`visit pages under a tight in-flight budget (${process.env.TEST_DATABASE})`, () => {
  let app: VisitsApp;

  beforeAll(async () => {
    app = await startVisitsApp({ PAGES_IN_FLIGHT_MB: '1', VISITS_CACHE_MB: '0' });
  });
  afterAll(async () => {
    await app.t.close();
  });

  it('answers every one of many concurrent page and feed requests in full', async () => {
    const { t, visits, today, partner, token } = app;
    const from = addDays(today, -31);
    const to = addDays(today, -1);
    const whole = expectedIds(visits, { clientId: 1001, from, to });
    expect(whole.length).toBeGreaterThan(20);
    const get = (path: string) => request(t.http).get(path).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    const skips = Array.from({ length: 24 }, (_, i) => i % whole.length);
    const pages = skips.map((skip) => get(`/visits/standard?SvcClientId=1001&FromDate=${from}&ToDate=${to}&Skip=${skip}&Take=50`));
    const feeds = Array.from({ length: 6 }, () => get(`/visits/plus/changes?SvcClientId=1001&Since=${addDays(today, -60)}T00:00:00Z&Take=50`));
    const [pageResponses, feedResponses] = await Promise.all([Promise.all(pages), Promise.all(feeds)]);
    const tokens = PageTokens.fromConfig(t.config);
    const position = (after: string) => {
      const opened = tokens.open(after);
      expect(opened?.scope).toBe('changes:plus:1001::');
      return opened?.position;
    };
    pageResponses.forEach((res, i) => {
      expect(res.status).toBe(200);
      expect((res.body.data.visits as { visitId: number }[]).map((v) => v.visitId)).toEqual(whole.slice(skips[i], skips[i] + 50));
    });
    for (const res of feedResponses) {
      expect(res.status).toBe(200);
      expect(res.body.data.visits).toHaveLength(Math.min(50, visits.filter((v) => v.clientId === 1001).length));
      // Tokens are sealed afresh each time: the same position, not the same text.
      expect(position(res.body.paging.after as string)).toEqual(position(feedResponses[0].body.paging.after as string));
    }
  });
});

/**
 * With the budget held by another credential's page that is not being read, a partner's page
 * request waits PAGES_WAIT_SECONDS for room, then gets a 503 to retry, on the visit pages
 * (answered ahead of Express once the token is known) and on the change feed alike.
 */
describe(`visit pages when no room comes in time (${process.env.TEST_DATABASE})`, () => {
  let app: VisitsApp;

  beforeAll(async () => {
    app = await startVisitsApp({ PAGES_IN_FLIGHT_MB: '1', PAGES_WAIT_SECONDS: '1', VISITS_CACHE_MB: '0' });
  });
  afterAll(async () => {
    await app.t.close();
  });

  it('answers 503 with Retry-After in the problem shape, and serves again once the page holding the budget is gone', async () => {
    const { t, today, partner, token } = app;
    const get = (path: string) => request(t.http).get(path).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    const page = `/visits/standard?SvcClientId=1001&FromDate=${addDays(today, -31)}&ToDate=${addDays(today, -1)}&Skip=0&Take=50`;
    const feed = `/visits/plus/changes?SvcClientId=1001&Since=${addDays(today, -60)}T00:00:00Z&Take=50`;
    // The token is verified once: the next page request is answered ahead of Express.
    expect((await get(page)).status).toBe(200);

    // Another credential's 2 MB page, whose response never closes, holds the whole budget.
    const holder = Object.assign(new EventEmitter(), { closed: false, destroyed: false, setTimeout: () => holder }) as unknown as ServerResponse;
    await t.app.get(PagesInFlight).serve(holder, 1, 'another-credential', () => Promise.resolve({ body: Buffer.alloc(2 << 20), release: () => undefined }), (held, sending) => {
      sending(held.body);
      return Promise.resolve();
    });
    for (const path of [page, feed]) {
      const started = Date.now();
      const res = await get(path);
      expect(Date.now() - started).toBeGreaterThanOrEqual(900);
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(res.headers['retry-after']).toBe('5');
      expect(res.body).toEqual({
        title: 'Service Unavailable',
        status: 503,
        detail: 'The service is writing as many visit pages as it holds and found no room for this one within 1 s; retry after the time in Retry-After.',
        instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
      });
    }

    holder.emit('close');
    expect((await get(page)).status).toBe(200);
    expect((await get(feed)).status).toBe(200);
  });
});

/**
 * Pages pipelined on one connection are answered in turn; those still queued when the
 * connection goes never emit 'close' in Node. What their bodies hold of the budget is given
 * back all the same, so that no partner's dropped connection keeps other pages waiting.
 */
describe(`pages queued on a pipelined connection that goes away (${process.env.TEST_DATABASE})`, () => {
  let app: VisitsApp;

  beforeAll(async () => {
    app = await startVisitsApp({ VISITS_CACHE_MB: '0', RATE_LIMIT_PER_MINUTE: '1000' });
    await app.t.app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await app.t.close();
  });

  it('gives back every body they hold once the connection is closed', async () => {
    const { t, today, partner, token } = app;
    const inFlight = t.app.get(PagesInFlight);
    const atRest = inFlight.room;
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const from = addDays(today, -31);
    const to = addDays(today, -1);
    const head = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\nsvc-api-key: ${partner.apiKey}\r\nAuthorization: Bearer ${token}\r\n\r\n`;
    const requests = Array.from({ length: 200 }, (_, i) =>
      head(i % 3 === 2 ? `/visits/plus/changes?SvcClientId=1001&Since=${addDays(today, -60)}T00:00:00Z&Take=${40 + (i % 50)}` : `/visits/standard?SvcClientId=1001&FromDate=${from}&ToDate=${to}&Skip=${i % 40}&Take=50`),
    );
    // The client reads nothing, so that answers queue behind the first, then goes.
    const socket = connect(port, '127.0.0.1');
    socket.pause();
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', () => socket.write(requests.join(''), () => resolve()));
      socket.on('error', reject);
    });
    const filling = Date.now() + 5_000;
    while (inFlight.room === atRest && Date.now() < filling) await new Promise((wake) => setTimeout(wake, 20));
    await new Promise((wake) => setTimeout(wake, 300));
    expect(inFlight.room).toBeLessThan(atRest);
    socket.destroy();
    const deadline = Date.now() + 10_000;
    while (inFlight.room !== atRest && Date.now() < deadline) await new Promise((wake) => setTimeout(wake, 50));
    expect(inFlight.room).toBe(atRest);
    const res = await request(t.http).get(`/visits/standard?SvcClientId=1001&FromDate=${from}&ToDate=${to}&Skip=0&Take=50`).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    expect(res.status).toBe(200);
  });
});
