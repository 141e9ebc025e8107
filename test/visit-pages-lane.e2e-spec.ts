import { jest } from '@jest/globals';
import request from 'supertest';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays } from '../src/common/clock.js';
import { MetricsService } from '../src/metrics/metrics.service.js';
import { VisitPagesLane } from '../src/visits/visit-pages-lane.js';
import { VisitsService } from '../src/visits/visits.service.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import { stableHeaders, watchLane, type Watch } from './helpers/lanes.js';
import { rawRequest, type RawResponse } from './helpers/raw-http.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { seedVisits } from './helpers/visits-fixture.js';

/**
 * The visit pages lane answers a page request before Express when every check was made
 * before; its answers must be the ones Express's path gives, and every other request must
 * reach Express untouched (refusals, a rate-limited request counted once, a page that could
 * not be read). `answer` is watched to know which of the two answered.
 */

describe(`visit pages answered ahead of Express (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let today: string;
  let partner: IssuedCredential;
  let token: string;
  let watch: Watch;

  beforeAll(async () => {
    // Behind a proxy on loopback (X-Forwarded-Proto counts), with CORS on for one origin.
    t = await startTestApp({ TRUST_PROXY: 'loopback', CORS_ORIGINS: 'https://partner.example' });
    ({ today } = await seedVisits(t));
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
    watch = watchLane(t.app.get(VisitPagesLane));
    // Listening, for requests whose answers are read as they are on the wire (compressed bytes included).
    await t.app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await t.close();
  });

  const path = (variant = 'standard', extra = '') =>
    `/visits/${variant}?SvcClientId=1001&FromDate=${addDays(today, -31)}&ToDate=${addDays(today, -1)}&Skip=0&Take=20${extra}`;
  const get = (url: string, headers: Record<string, string> = {}, c: IssuedCredential = partner, bearer = token) =>
    rawRequest(t.app.getHttpServer(), url, { 'svc-api-key': c.apiKey, authorization: `Bearer ${bearer}`, ...headers });

  /** The same request through Express's path, then through the lane. */
  async function both(url: string, headers: Record<string, string> = {}): Promise<[RawResponse, RawResponse]> {
    watch.bypass(true);
    const viaExpress = await get(url, headers);
    watch.bypass(false);
    watch.answered.length = 0;
    const viaLane = await get(url, headers);
    expect(watch.answered).toEqual([true]);
    return [viaExpress, viaLane];
  }

  it('answers a token verified before with the bytes and headers Express gives', async () => {
    // The token was verified once (by the guard); every page after it can take the lane.
    await get(path());
    const cases: [string, Record<string, string>][] = [
      ['identity', { 'Accept-Encoding': 'identity' }],
      ['no Accept-Encoding', {}],
      ['gzip', { 'Accept-Encoding': 'gzip' }],
      ['br', { 'Accept-Encoding': 'gzip, br' }],
      ['over TLS at the proxy', { 'X-Forwarded-Proto': 'https' }],
      ['a caller request id', { 'X-Request-Id': 'partner-req-42' }],
    ];
    for (const [what, headers] of cases) {
      for (const variant of ['standard', 'plus']) {
        const [viaExpress, viaLane] = await both(path(variant), headers);
        expect({ what, status: viaLane.status }).toEqual({ what, status: 200 });
        expect(stableHeaders(viaLane)).toEqual(stableHeaders(viaExpress));
        expect(viaLane.body.equals(viaExpress.body)).toBe(true);
        expect(viaLane.headers['x-request-id']).toMatch(what === 'a caller request id' ? /^partner-req-42$/ : /^[0-9a-f-]{36}$/);
      }
    }
    const [, overTls] = await both(path(), { 'X-Forwarded-Proto': 'https' });
    expect(overTls.headers['strict-transport-security']).toMatch(/^max-age=\d+/);
    const [, plain] = await both(path(), { 'Accept-Encoding': 'identity' });
    expect(plain.headers['strict-transport-security']).toBeUndefined();
    expect(plain.headers['content-encoding']).toBeUndefined();
    const visits = (JSON.parse(plain.body.toString('utf8')) as { data: { visits: unknown[] } }).data.visits;
    expect(visits).toHaveLength(20);
  });

  it('answers If-None-Match with the 304 Express gives', async () => {
    const etag = String((await get(path())).headers.etag);
    const [viaExpress, viaLane] = await both(path(), { 'If-None-Match': etag });
    expect(viaLane.status).toBe(304);
    expect(viaExpress.status).toBe(304);
    expect(stableHeaders(viaLane)).toEqual(stableHeaders(viaExpress));
    expect(viaLane.body.length).toBe(0);
  });

  it('counts its answers in the request metrics under the route', async () => {
    const metrics = t.app.get(MetricsService);
    const count = async (): Promise<number> => {
      const values = (await metrics.requests.get()).values;
      return values.find((v) => v.labels.route === '/visits/standard' && v.labels.status === '200')?.value ?? 0;
    };
    const before = await count();
    watch.answered.length = 0;
    await get(path());
    await get(path());
    expect(watch.answered).toEqual([true, true]);
    expect((await count()) - before).toBe(2);
  });

  it('leaves to Express every request a check refuses, which answers it in full', async () => {
    const standardOnly = await tokenFor(t.http, partner, 'svc-results-api visits/standard.read');
    await get(path('standard'), {}, partner, standardOnly);
    const stranger = await issueCredential(t);
    const refusals: [string, () => Promise<RawResponse>, number, RegExp][] = [
      ['an unknown API key', () => get(path(), {}, { ...partner, apiKey: 'svck_unknown' }), 401, /svc-api-key is not valid/],
      ['a token of another credential', () => get(path(), {}, stranger), 401, /another client/],
      ['a token without the scope', () => get(path('plus'), {}, partner, standardOnly), 403, /lacks the scope 'visits\/plus.read'/],
      ['a broken query', () => get(path('standard', '&Take=0')), 400, /Bad Request/],
      ['a client the credential may not read', () => get(path().replace('SvcClientId=1001', 'SvcClientId=1002')), 403, /./],
    ];
    for (const [what, call, status, detail] of refusals) {
      watch.answered.length = 0;
      const res = await call();
      expect({ what, status: res.status, lane: watch.answered }).toEqual({ what, status, lane: [false] });
      expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
      expect(res.body.toString('utf8')).toMatch(detail);
      expect(res.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    }
  });

  it('answers a browser at an allowed origin, and one at another, with the CORS headers Express gives', async () => {
    for (const origin of ['https://partner.example', 'https://elsewhere.example']) {
      const [viaExpress, viaLane] = await both(path(), { Origin: origin });
      expect(viaLane.status).toBe(200);
      expect(stableHeaders(viaLane)).toEqual(stableHeaders(viaExpress));
      expect(viaLane.headers['access-control-allow-origin']).toBe(origin === 'https://partner.example' ? origin : undefined);
      expect(viaLane.headers.vary).toBe('Origin, Accept-Encoding');
    }
  });

  it('leaves to Express a GET that carries a body, which answers it as one without: the body is not read', async () => {
    watch.answered.length = 0;
    const res = await request(t.http)
      .get(path())
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Bearer ${token}`)
      .set('Content-Type', 'application/json')
      .send('{"broken": ');
    expect(watch.answered).toEqual([]);
    const without = await get(path());
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.text).toBe(without.body.toString('utf8'));
    // Counted under the rate limit like any other request, with its headers (the contract's).
    expect(res.headers.ratelimit).toMatch(/^"default";r=\d+;t=\d+$/);
  });

  it('leaves to Express a page it could not read, counted once under the rate limit', async () => {
    const remaining = async (): Promise<number> => Number((await get(path())).headers['x-rate-limit-remaining']);
    const first = await remaining();
    const read = jest.spyOn(t.app.get(VisitsService), 'page');
    const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    read.mockRejectedValueOnce(down);
    watch.answered.length = 0;
    const res = await get(path());
    // The lane's read failed; Express's path read the page again and answered it.
    expect(watch.answered).toEqual([false]);
    expect(res.status).toBe(200);
    expect(Number(res.headers['x-rate-limit-remaining'])).toBe(first - 1);
    expect(read).toHaveBeenCalledTimes(2);
    read.mockRestore();
  });
});

describe(`the rate limit of requests the lane takes (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let today: string;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '4' });
    ({ today } = await seedVisits(t));
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts each request once, and hands the one past the limit to the guard for its 429', async () => {
    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const watch = watchLane(t.app.get(VisitPagesLane));
    const url = `/visits/standard?SvcClientId=1001&FromDate=${addDays(today, -31)}&ToDate=${addDays(today, -1)}&Skip=0&Take=5`;
    const answers: { status: number; remaining: string | undefined; lane: boolean | undefined }[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await request(t.http).get(url).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
      answers.push({ status: res.status, remaining: res.headers['x-rate-limit-remaining'], lane: watch.answered[i] });
      if (res.status === 429) {
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(res.headers['retry-after']).toMatch(/^\d+$/);
        expect(res.headers.ratelimit).toMatch(/^"default";r=0;t=\d+$/);
      }
    }
    // The first request verifies the token (Express's path); the token request itself counted under the same key.
    expect(answers).toEqual([
      { status: 200, remaining: '2', lane: false },
      { status: 200, remaining: '1', lane: true },
      { status: 200, remaining: '0', lane: true },
      { status: 429, remaining: '0', lane: false },
      { status: 429, remaining: '0', lane: false },
      { status: 429, remaining: '0', lane: false },
    ]);
  });
});
