import { request as httpRequest, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { jest } from '@jest/globals';
import { AuthCacheService } from '../../src/auth/auth-cache.service.js';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { TokenLane } from '../../src/auth/token-lane.js';
import { TokenService } from '../../src/auth/token.service.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { issueCredential, seedClients } from '../helpers/auth.js';
import { stableHeaders, watchLane, type Watch } from '../helpers/lanes.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * The token lane answers a token request before Express; its answers must be the ones
 * Express's path gives (the token, or its OAuth error, with every header), and every request
 * it hands on must reach Express with its body and its rate-limit count, read and counted once.
 * `answer` is watched to know which of the two answered.
 */

const FORM = { 'Content-Type': 'application/x-www-form-urlencoded' };

/** A token response's body, with the token's parts that differ from one token to the next (jti, iat, exp) taken out. */
function stableToken(res: RawResponse): unknown {
  const body = JSON.parse(res.body.toString('utf8')) as { access_token: string } & Record<string, unknown>;
  const [header, payload] = body.access_token.split('.').slice(0, 2).map((part) => JSON.parse(Buffer.from(part, 'base64url').toString('utf8')) as object);
  const { jti, iat, exp, ...claims } = payload as Record<string, unknown>;
  expect(jti).toMatch(/^[0-9a-f-]{36}$/);
  expect(exp).toBe((iat as number) + 3600);
  return { ...body, access_token: { header, claims } };
}

describe(`token requests answered ahead of Express (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let watch: Watch;

  beforeAll(async () => {
    // Behind a proxy on loopback (X-Forwarded-Proto counts), with CORS on for one origin.
    t = await startTestApp({ TRUST_PROXY: 'loopback', CORS_ORIGINS: 'https://partner.example' });
    await seedClients(t);
    partner = await issueCredential(t);
    watch = watchLane(t.app.get(TokenLane));
    await t.app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (body: string | Buffer, headers: Record<string, string> = {}, path = '/connect/token') =>
    rawRequest(t.app.getHttpServer(), path, { 'svc-api-key': partner.apiKey, ...FORM, ...headers }, 'POST', body);
  const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
  const grant = (extra: Record<string, string> = {}) =>
    form({ grant_type: 'client_credentials', client_id: partner.clientId, client_secret: partner.clientSecret, ...extra });

  /** The same request through Express's path, then through the lane. */
  async function both(body: string | Buffer, headers: Record<string, string> = {}): Promise<[RawResponse, RawResponse]> {
    watch.bypass(true);
    watch.answered.length = 0;
    const viaExpress = await post(body, headers);
    watch.bypass(false);
    watch.answered.length = 0;
    const viaLane = await post(body, headers);
    expect(watch.answered).toEqual([true]);
    return [viaExpress, viaLane];
  }

  it('issues the token Express issues, with the same headers', async () => {
    const basic = `Basic ${Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString('base64')}`;
    const cases: [string, string | Buffer, Record<string, string>][] = [
      ['client_secret_post', grant(), {}],
      ['a gzip-encoded form', gzipSync(grant()), { 'Content-Encoding': 'gzip' }],
      ['a chunked form', grant(), { 'Transfer-Encoding': 'chunked' }],
      ['client_secret_basic', form({ grant_type: 'client_credentials' }), { Authorization: basic }],
      ['a scope asked for', grant({ scope: 'svc-results-api visits/standard.read' }), {}],
      ['charset=utf-8', grant(), { 'Content-Type': 'application/x-www-form-urlencoded; charset=utf-8' }],
      ['gzip accepted', grant(), { 'Accept-Encoding': 'gzip, br' }],
      ['over TLS at the proxy', grant(), { 'X-Forwarded-Proto': 'https' }],
      ['a browser at the allowed origin', grant(), { Origin: 'https://partner.example' }],
      ['a caller request id', grant(), { 'X-Request-Id': 'partner-req-7' }],
    ];
    for (const [what, body, headers] of cases) {
      const [viaExpress, viaLane] = await both(body, headers);
      expect({ what, status: viaLane.status }).toEqual({ what, status: 200 });
      expect(stableHeaders(viaLane)).toEqual(stableHeaders(viaExpress));
      expect(stableToken(viaLane)).toEqual(stableToken(viaExpress));
      expect(viaLane.headers['cache-control']).toBe('no-store');
      expect(viaLane.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(viaLane.headers['x-request-id']).toMatch(what === 'a caller request id' ? /^partner-req-7$/ : /^[0-9a-f-]{36}$/);
      expect(viaLane.headers.ratelimit).toMatch(/^"default";r=\d+;t=\d+, "token";r=\d+;t=\d+$/);
    }
    const [, overTls] = await both(grant(), { 'X-Forwarded-Proto': 'https' });
    expect(overTls.headers['strict-transport-security']).toMatch(/^max-age=\d+/);
    const [, browser] = await both(grant(), { Origin: 'https://partner.example' });
    expect(browser.headers['access-control-allow-origin']).toBe('https://partner.example');
  });

  it('answers each OAuth error with the bytes and headers Express gives', async () => {
    const cases: [string, string, Record<string, string>, number, string][] = [
      ['a wrong secret', grant({ client_secret: 'wrong' }), {}, 401, 'invalid_client'],
      ['another grant', grant({ grant_type: 'password' }), {}, 400, 'unsupported_grant_type'],
      ['no grant type', form({ client_id: partner.clientId, client_secret: partner.clientSecret }), {}, 400, 'invalid_request'],
      ['a scope not assigned', grant({ scope: 'svc-results-api webhooks.manage' }), {}, 400, 'invalid_scope'],
      ['a parameter twice', `${grant()}&grant_type=client_credentials`, {}, 400, 'invalid_request'],
      ['an empty body', '', {}, 401, 'invalid_client'],
      ['an empty body from a script in a browser page', '', { 'x-requested-with': 'XMLHttpRequest' }, 401, 'invalid_client'],
    ];
    for (const [what, body, headers, status, error] of cases) {
      const [viaExpress, viaLane] = await both(body, headers);
      expect({ what, status: viaLane.status }).toEqual({ what, status });
      expect(stableHeaders(viaLane)).toEqual(stableHeaders(viaExpress));
      expect(viaLane.body.toString('utf8')).toBe(viaExpress.body.toString('utf8'));
      expect(JSON.parse(viaLane.body.toString('utf8'))).toMatchObject({ error });
      expect(viaLane.headers['cache-control']).toBe('no-store');
      // The challenge of a missing authentication: Basic's, but not to a script in a browser page.
      if (what.startsWith('an empty body')) {
        expect(viaLane.headers['www-authenticate']).toBe(headers['x-requested-with'] ? undefined : 'Basic realm="svc-results-api", charset="UTF-8"');
      }
    }
  });

  it("names the caller in the request's line: the credential whose key it carries, refused or not", async () => {
    const server = t.app.getHttpServer();
    const named: unknown[] = [];
    const listener = (req: IncomingMessage, res: ServerResponse): void => {
      res.once('close', () => named.push((res as ServerResponse & { locals?: { clientId?: unknown } }).locals?.clientId));
    };
    server.on('request', listener);
    watch.answered.length = 0;
    try {
      expect((await post(grant())).status).toBe(200);
      expect((await post(grant({ client_secret: 'wrong' }))).status).toBe(401);
    } finally {
      server.off('request', listener);
    }
    expect({ named, lane: watch.answered }).toEqual({ named: [partner.clientId, partner.clientId], lane: [true, true] });
  });

  it('counts its answers in the request metrics under the route', async () => {
    const metrics = t.app.get(MetricsService);
    const count = async (status: string): Promise<number> =>
      (await metrics.requests.get()).values.find((v) => v.labels.route === '/connect/token' && v.labels.status === status)?.value ?? 0;
    const [ok, refused] = [await count('200'), await count('401')];
    watch.answered.length = 0;
    await post(grant());
    await post(grant({ client_secret: 'wrong' }));
    expect(watch.answered).toEqual([true, true]);
    expect([(await count('200')) - ok, (await count('401')) - refused]).toEqual([1, 1]);
  });

  it('leaves to Express a request without a form or a live API key, which answers it in full', async () => {
    const cases: [string, () => Promise<RawResponse>, number, RegExp, boolean[]][] = [
      ['JSON', () => post(JSON.stringify({ grant_type: 'client_credentials' }), { 'Content-Type': 'application/json' }), 400, /application\/x-www-form-urlencoded/, []],
      ['no API key', () => rawRequest(t.app.getHttpServer(), '/connect/token', FORM, 'POST', grant()), 401, /svc-api-key header is required/, []],
      // The lane looks the key up and hands the request on: Express's limits count it by address.
      ['an unknown API key', () => post(grant(), { 'svc-api-key': 'svck_unknown' }), 401, /svc-api-key is not valid/, [false]],
      ['two API keys', () => post(grant(), { 'svc-api-key': 'svck_a, svck_b' }), 401, /more than one svc-api-key/, [false]],
    ];
    for (const [what, call, status, detail, lane] of cases) {
      watch.answered.length = 0;
      const res = await call();
      expect({ what, status: res.status, lane: watch.answered }).toEqual({ what, status, lane });
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(res.body.toString('utf8')).toMatch(detail);
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it("times a request from when its body is in, as Express's path does: a slow upload is not the service's time", async () => {
    const metrics = t.app.get(MetricsService);
    const seconds = async (): Promise<number> =>
      (await metrics.duration.get()).values.find((v) => v.metricName === 'results_http_request_duration_seconds_sum' && v.labels.route === '/connect/token' && String(v.labels.status) === '200')?.value ?? 0;
    const before = await seconds();
    const body = Buffer.from(grant());
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    watch.answered.length = 0;
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest({ host: '127.0.0.1', port, path: '/connect/token', method: 'POST', headers: { 'svc-api-key': partner.apiKey, ...FORM, 'Content-Length': String(body.length) } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode!));
      });
      req.on('error', reject);
      // Half the form, a pause of a second, then the rest.
      req.write(body.subarray(0, 20));
      setTimeout(() => req.end(body.subarray(20)), 1000);
    });
    expect({ status, lane: watch.answered }).toEqual({ status: 200, lane: [true] });
    const timed = (await seconds()) - before;
    expect(timed).toBeGreaterThan(0);
    expect(timed).toBeLessThan(0.9);
  });

  it("times the look-up of the request's API key, as Express's path does in its guards: a database slow to answer is the service's time", async () => {
    const metrics = t.app.get(MetricsService);
    const seconds = async (): Promise<number> =>
      (await metrics.duration.get()).values.find((v) => v.metricName === 'results_http_request_duration_seconds_sum' && v.labels.route === '/connect/token' && String(v.labels.status) === '200')?.value ?? 0;
    const cache = t.app.get(AuthCacheService);
    const lookUp = cache.keyOwner;
    const slow = jest.spyOn(cache, 'keyOwner').mockImplementation(async (presented) => {
      await new Promise((resolve) => setTimeout(resolve, 600));
      return lookUp(presented);
    });
    try {
      const before = await seconds();
      watch.answered.length = 0;
      expect((await post(grant())).status).toBe(200);
      expect(watch.answered).toEqual([true]);
      expect((await seconds()) - before).toBeGreaterThan(0.5);
    } finally {
      slow.mockRestore();
    }
  });

  it('hands on a form it could not read, which Express refuses without reading it again, counted once', async () => {
    const remaining = async (): Promise<number> => Number((await post(grant())).headers['x-rate-limit-remaining']);
    const before = await remaining();
    watch.answered.length = 0;
    const big = await post(`${grant()}&padding=${'x'.repeat(20 * 1024)}`);
    expect(watch.answered).toEqual([false]);
    expect(big.status).toBe(413);
    expect(big.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(big.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(big.body.toString('utf8'))).toEqual({ error: 'invalid_request', error_description: 'The form is larger than the service accepts (16 KiB).' });
    expect(big.headers.ratelimit).toMatch(/^"default";r=\d+;t=\d+, "token";r=\d+;t=\d+$/);
    // The refused request counted once under the API key's limit, between the two tokens.
    expect(await remaining()).toBe(before - 2);
    const charset = await post(grant(), { 'Content-Type': 'application/x-www-form-urlencoded; charset=koi8-r' });
    expect(charset.status).toBe(415);
    expect(charset.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(charset.headers.ratelimit).toMatch(/^"default";r=\d+;t=\d+, "token";r=\d+;t=\d+$/);
    expect(JSON.parse(charset.body.toString('utf8'))).toMatchObject({ error: 'invalid_request' });
  });

  it('hands on a request whose token could not be issued for want of the database, counted once', async () => {
    const remaining = async (): Promise<number> => Number((await post(grant())).headers['x-rate-limit-remaining']);
    const before = await remaining();
    const issue = jest.spyOn(t.app.get(TokenService), 'issue');
    const down = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
    issue.mockRejectedValueOnce(down);
    watch.answered.length = 0;
    const res = await post(grant());
    // The lane's attempt failed; Express's path issued the token with the body the lane had read.
    expect(watch.answered).toEqual([false]);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({ token_type: 'Bearer', expires_in: 3600 });
    expect(issue).toHaveBeenCalledTimes(2);
    expect(Number(res.headers['x-rate-limit-remaining'])).toBe(before - 1);
    issue.mockRestore();
  });
});

describe(`the rate limits of token requests the lane takes (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '100', TOKEN_RATE_LIMIT_PER_MINUTE: '3' });
    await seedClients(t);
    await t.app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await t.close();
  });

  it('counts each request once per limit, and hands the one past the client limit to the guard for its 429', async () => {
    const partner = await issueCredential(t);
    const watch = watchLane(t.app.get(TokenLane));
    const body = new URLSearchParams({ grant_type: 'client_credentials', client_id: partner.clientId, client_secret: partner.clientSecret }).toString();
    const answers: { status: number; limits: string | undefined; lane: boolean | undefined }[] = [];
    for (let i = 0; i < 5; i++) {
      const res = await rawRequest(t.app.getHttpServer(), '/connect/token', { 'svc-api-key': partner.apiKey, ...FORM }, 'POST', body);
      answers.push({ status: res.status, limits: String(res.headers.ratelimit).replace(/;t=\d+/g, ''), lane: watch.answered[i] });
      if (res.status === 429) {
        expect(JSON.parse(res.body.toString('utf8'))).toMatchObject({ error: 'slow_down' });
        expect(res.headers['retry-after']).toMatch(/^\d+$/);
        expect(res.headers['cache-control']).toBe('no-store');
      }
    }
    expect(answers).toEqual([
      { status: 200, limits: '"default";r=99, "token";r=2', lane: true },
      { status: 200, limits: '"default";r=98, "token";r=1', lane: true },
      { status: 200, limits: '"default";r=97, "token";r=0', lane: true },
      { status: 429, limits: '"default";r=96, "token";r=0', lane: false },
      { status: 429, limits: '"default";r=95, "token";r=0', lane: false },
    ]);
  });
});
