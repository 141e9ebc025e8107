import request from 'supertest';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const POLICY = /^"default";q=5;w=60$/;

/** A response and the clock around it: the server answered between `before` and `after`. */
async function timed(req: request.Test): Promise<{ res: request.Response; before: number; after: number }> {
  const before = Date.now();
  const res = await req;
  return { res, before, after: Date.now() };
}

/**
 * The X-Rate-Limit-* headers say what the `name` item of RateLimit-Policy and RateLimit say:
 * limit = q, remaining = r, and reset = the window's end as an ISO 8601 UTC date-time, within
 * a second of now + t (t is the whole seconds left, rounded up).
 */
function expectXRateLimit({ res, before, after }: { res: request.Response; before: number; after: number }, name: string): void {
  const policy = new RegExp(`"${name}";q=(\\d+);w=\\d+`).exec(String(res.headers['ratelimit-policy']));
  const item = new RegExp(`"${name}";r=(\\d+);t=(\\d+)`).exec(String(res.headers.ratelimit));
  expect(policy).not.toBeNull();
  expect(item).not.toBeNull();
  expect(res.headers['x-rate-limit-limit']).toBe(policy![1]);
  expect(res.headers['x-rate-limit-remaining']).toBe(item![1]);
  const reset = String(res.headers['x-rate-limit-reset']);
  expect(reset).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
  const t = Number(item![2]) * 1000;
  expect(Date.parse(reset)).toBeGreaterThan(before + t - 1000);
  expect(Date.parse(reset)).toBeLessThanOrEqual(after + t);
}

/** A request refused by the per-minute limit: 429, the problem document, Retry-After within the window, the limit spent. */
function expectLimitReached(refused: request.Response, limit: number): void {
  expect(refused.status).toBe(429);
  expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  expect(refused.headers.ratelimit).toMatch(/^"default";r=0;t=\d+$/);
  const retryAfter = Number(refused.headers['retry-after']);
  expect(retryAfter).toBeGreaterThan(0);
  expect(retryAfter).toBeLessThanOrEqual(60);
  expect(JSON.parse(refused.text)).toEqual({
    title: 'Too Many Requests',
    status: 429,
    detail: `The rate limit of ${limit} requests a minute is reached; retry after ${retryAfter === 1 ? '1 second' : `${retryAfter} seconds`}.`,
    instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
  });
}

describe(`rate limits (${process.env.TEST_DATABASE}, counters in the process)`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let other: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '5', TOKEN_RATE_LIMIT_PER_MINUTE: '3' });
    await seedClients(t);
    partner = await issueCredential(t);
    other = await issueCredential(t);
    const res = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: partner.clientId, client_secret: partner.clientSecret });
    token = res.body.access_token as string;
  });
  afterAll(async () => {
    await t.close();
  });

  const branches = (c: IssuedCredential, bearer = token) =>
    request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', c.apiKey).set('Authorization', `Bearer ${bearer}`);

  it('allows the limit per API key, with RateLimit headers on every response, then answers 429', async () => {
    // The token request above was the first of this key's five.
    let windowEnd = '';
    for (let remaining = 3; remaining >= 0; remaining--) {
      const answer = await timed(branches(partner));
      const { res } = answer;
      windowEnd = String(res.headers['x-rate-limit-reset']);
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toMatch(POLICY);
      expect(res.headers.ratelimit).toMatch(new RegExp(`^"default";r=${remaining};t=\\d+$`));
      expect(res.headers['x-rate-limit-limit']).toBe('5');
      expect(res.headers['x-rate-limit-remaining']).toBe(String(remaining));
      expectXRateLimit(answer, 'default');
    }
    const answer = await timed(branches(partner));
    const refused = answer.res;
    expect(refused.headers['x-rate-limit-remaining']).toBe('0');
    expectXRateLimit(answer, 'default');
    // A fixed window: refused until the end the allowed answers gave, not for a minute from the refusal.
    expect(refused.headers['x-rate-limit-reset']).toBe(windowEnd);
    expectLimitReached(refused, 5);
  });

  it('counts per API key: another key is not limited', async () => {
    const res = await request(t.http).get('/health/live');
    expect(res.headers.ratelimit).toBeUndefined();
    expect(res.headers['x-rate-limit-limit']).toBeUndefined();
    const answer = await timed(
      request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', other.apiKey).set('Authorization', 'Bearer not-a-token'),
    );
    const fresh = answer.res;
    expect(fresh.status).toBe(401);
    expect(fresh.headers.ratelimit).toMatch(/^"default";r=4;t=\d+$/);
    expect(fresh.headers['x-rate-limit-remaining']).toBe('4');
    expectXRateLimit(answer, 'default');
  });

  it('counts failed requests too', async () => {
    for (let i = 0; i < 4; i++) expect((await branches(other, 'still-not-a-token')).status).toBe(401);
    const res = await branches(other, 'still-not-a-token');
    expect(res.status).toBe(429);
  });

  it('limits token requests per client id, with the OAuth error body', async () => {
    const third = await issueCredential(t);
    const ask = (apiKey: string) =>
      request(t.http)
        .post('/connect/token')
        .set('svc-api-key', apiKey)
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: third.clientId, client_secret: third.clientSecret });
    const keys = [third.apiKey, (await t.app.get((await import('../../src/auth/credentials.service.js')).CredentialsService).addKey(third.clientId)).apiKey];
    for (let i = 0; i < 3; i++) {
      const answer = await timed(ask(keys[i % 2]));
      const ok = answer.res;
      expect(ok.status).toBe(200);
      expect(ok.headers['ratelimit-policy']).toContain('"token";q=3;w=60');
      // The X-Rate-Limit-* headers show the limit closest to refusing: here the client's own.
      expect(ok.headers['x-rate-limit-limit']).toBe('3');
      expect(ok.headers['x-rate-limit-remaining']).toBe(String(2 - i));
      expectXRateLimit(answer, 'token');
    }
    // Another key of the same client does not get round the per-client limit.
    const answer = await timed(ask(keys[1]));
    const refused = answer.res;
    expect(refused.status).toBe(429);
    expect(refused.headers['x-rate-limit-limit']).toBe('3');
    expect(refused.headers['x-rate-limit-remaining']).toBe('0');
    expectXRateLimit(answer, 'token');
    expect(refused.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(refused.body).toEqual({ error: 'slow_down', error_description: expect.stringMatching(/^Too many token requests for this client; retry after (?:1 second|\d+ seconds)\.$/) });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('counts refused requests in the metrics', async () => {
    const text = await t.app.get(MetricsService).registry.metrics();
    expect(text).toMatch(/^results_rate_limited_total\{limit="default"\} [2-9]$/m);
    expect(text).toMatch(/^results_rate_limited_total\{limit="token"\} 1$/m);
    expect(text).toMatch(/^results_tokens_issued_total [4-9]$/m);
    expect(text).toMatch(/^results_token_failures_total\{error="slow_down"\} 1$/m);
    expect(text).toMatch(/^results_http_requests_total\{method="GET",route="\/branches",status="429"\} [2-9]$/m);
    expect(text).toMatch(/^results_http_request_duration_seconds_bucket\{le="\+Inf",method="GET",route="\/branches",status="200"\} 4$/m);
  });

  it('counts a token request under the token limit whatever the case of its path or a trailing slash', async () => {
    const fourth = await issueCredential(t);
    const ask = (path: string) =>
      request(t.http)
        .post(path)
        .set('svc-api-key', fourth.apiKey)
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: fourth.clientId, client_secret: fourth.clientSecret });
    for (const [i, path] of ['/connect/token/', '/CONNECT/TOKEN', '/Connect/Token/'].entries()) {
      const res = await ask(path);
      expect({ path, status: res.status, remaining: res.headers['x-rate-limit-remaining'] }).toEqual({ path, status: 200, remaining: String(2 - i) });
      expect(res.headers.ratelimit).toMatch(/"token";r=\d+;t=\d+/);
    }
    const refused = await ask('/connect/token');
    expect(refused.status).toBe(429);
    expect(refused.body).toMatchObject({ error: 'slow_down' });
  });

  it('counts keys that are not live by the caller\'s address: a new made-up key per request opens no new window', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 6; i++) {
      const res = await request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', `svck_made_up_${i}_${Date.now()}`);
      statuses.push(res.status);
      if (res.status === 429) {
        expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
        expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
        break;
      }
      expect(res.body.detail).toBe('The svc-api-key is not valid.');
      expect(res.headers.ratelimit).toMatch(/^"default";r=\d;t=\d+$/);
    }
    // At most the limit (5) of them are answered 401; the next is refused by the limit.
    expect(statuses.at(-1)).toBe(429);
    expect(statuses.slice(0, -1).every((s) => s === 401)).toBe(true);
    // A live key from the same address has its own window.
    const fresh = await issueCredential(t);
    const ok = await request(t.http).post('/connect/token').set('svc-api-key', fresh.apiKey).type('form')
      .send({ grant_type: 'client_credentials', client_id: fresh.clientId, client_secret: fresh.clientSecret });
    expect(ok.status).toBe(200);
    expect(ok.headers.ratelimit).toMatch(/^"default";r=4;t=\d+, "token";r=2;t=\d+$/);
  });

  it('leaves the discovery documents unlimited, as the health probes, even once the address has spent its window', async () => {
    // The address's window spent by requests without a live key.
    for (let i = 0; i < 6; i++) await request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', `svck_spent_${i}`);
    expect((await request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', 'svck_spent')).status).toBe(429);
    // A gateway sent tokens naming keys it does not know fetches the key set again each time: never refused.
    for (let i = 0; i < 12; i++) {
      for (const path of ['/.well-known/jwks.json', '/.well-known/oauth-authorization-server']) {
        const res = await request(t.http).get(path);
        expect({ path, status: res.status, ratelimit: res.headers.ratelimit, policy: res.headers['ratelimit-policy'] }).toEqual({
          path,
          status: 200,
          ratelimit: undefined,
          policy: undefined,
        });
      }
    }
  });

  it("names the token limit on a token request refused by the key's limit, as on every token response", async () => {
    const fifth = await issueCredential(t);
    const token = await tokenFor(t.http, fifth);
    // The token request and four data requests use the key's five.
    for (let i = 0; i < 4; i++) expect((await request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', fifth.apiKey).set('Authorization', `Bearer ${token}`)).status).toBe(200);
    const refused = await request(t.http).post('/connect/token').set('svc-api-key', fifth.apiKey).type('form')
      .send({ grant_type: 'client_credentials', client_id: fifth.clientId, client_secret: fifth.clientSecret });
    expect(refused.status).toBe(429);
    // The key's limit refused it, not the client's token limit (which has one left): the description says which.
    expect(refused.body).toEqual({
      error: 'slow_down',
      error_description: expect.stringMatching(/^The API key's rate limit of 5 requests a minute, token requests included, is reached; retry after (?:1 second|\d+ seconds)\.$/),
    });
    expect(refused.headers['ratelimit-policy']).toBe('"default";q=5;w=60, "token";q=3;w=60');
    expect(refused.headers.ratelimit).toMatch(/^"default";r=0;t=\d+, "token";r=1;t=\d+$/);
  });
});

describe(`the token limit and the lockout together (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;

  beforeAll(async () => {
    // As the defaults have it (10 and 10): the window is spent by the very failures that lock the client out.
    t = await startTestApp({ RATE_LIMIT_PER_MINUTE: '100', TOKEN_RATE_LIMIT_PER_MINUTE: '3', TOKEN_FAILURES_MAX: '3' });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const ask = (c: IssuedCredential, secret = c.clientSecret, apiKey = c.apiKey) =>
    request(t.http).post('/connect/token').set('svc-api-key', apiKey).type('form').send({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: secret });

  it("says the lockout's end, not the window's, when both refuse: a partner retrying when told is not refused again", async () => {
    const victim = await issueCredential(t);
    for (let i = 0; i < 3; i++) expect((await ask(victim, `guess-${i}`)).status).toBe(401);
    // The window is spent: the guard refuses, and says when the lockout (15 minutes) ends.
    const refused = await ask(victim);
    expect(refused.status).toBe(429);
    expect(refused.headers['ratelimit']).toMatch(/"token";r=0;t=\d+/);
    expect(refused.body).toEqual({ error: 'slow_down', error_description: expect.stringMatching(/^Too many failed token requests for this client; retry after (?:1 second|\d+ seconds)\.$/) });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(800);
    const wait = refused.headers['retry-after'];
    expect(refused.body.error_description).toBe(`Too many failed token requests for this client; retry after ${wait === '1' ? '1 second' : `${wait} seconds`}.`);
  });

  it("says the window's end when only the window refuses, and never another client's lockout", async () => {
    const busy = await issueCredential(t);
    for (let i = 0; i < 3; i++) expect((await ask(busy)).status).toBe(200);
    const refused = await ask(busy);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({ error: 'slow_down', error_description: expect.stringMatching(/^Too many token requests for this client; retry after (?:1 second|\d+ seconds)\.$/) });
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    // A locked-out client's id asked with another client's key: counted and judged as that key's owner.
    const victim = await issueCredential(t);
    for (let i = 0; i < 3; i++) expect((await ask(victim, `guess-${i}`)).status).toBe(401);
    const foreign = await ask(victim, victim.clientSecret, busy.apiKey);
    expect(foreign.status).toBe(429);
    expect(Number(foreign.headers['retry-after'])).toBeLessThanOrEqual(60);
    expect(foreign.body.error_description).toMatch(/^Too many token requests for this client; retry after (?:1 second|\d+ seconds)\.$/);
  });
});

describe(`rate limits by address behind a proxy (${process.env.TEST_DATABASE}, TRUST_PROXY=1)`, () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: '3' });
  });
  afterAll(async () => {
    await t.close();
  });

  /** A request without a key, counted by address, as the proxy in front says it. */
  const from = (forwardedFor: string) => request(t.http).get('/branches?SvcClientId=1001').set('X-Forwarded-For', forwardedFor);

  /** Three requests from the address allowed (401: no credentials), the fourth refused, with the limit's headers and body. */
  async function expectWindowOfThree(addresses: string[]): Promise<void> {
    for (let i = 0; i < 3; i++) {
      const res = await from(addresses[i % addresses.length]);
      expect(res.status).toBe(401);
      expect(res.headers.ratelimit).toMatch(new RegExp(`^"default";r=${2 - i};t=\\d+$`));
      expect(res.headers['x-rate-limit-remaining']).toBe(String(2 - i));
    }
    const refused = await from(addresses[3 % addresses.length]);
    expectLimitReached(refused, 3);
  }

  it('counts a forwarded value that is not an address by the connection: a new made-up value each time opens no window', async () => {
    // 8 KB each, and all different: each would be a window of its own (and 8 KB of memory) if taken as the address.
    await expectWindowOfThree([0, 1, 2, 3].map((i) => `${String(i)}${'x'.repeat(8000)}`));
    // The connection's address is the one counted: a request without the header shares the window.
    const plain = await request(t.http).get('/branches?SvcClientId=1001');
    expect(plain.status).toBe(429);
    expect(plain.headers.ratelimit).toMatch(/^"default";r=0;t=\d+$/);
  });

  it('counts a forwarded IPv4 address as itself, each its own window', async () => {
    await expectWindowOfThree(['203.0.113.7']);
    const other = await from('203.0.113.8');
    expect(other.status).toBe(401);
    expect(other.headers.ratelimit).toMatch(/^"default";r=2;t=\d+$/);
  });

  it('counts forwarded IPv6 addresses by their /64: every address of one subscriber shares a window, the next /64 has its own', async () => {
    await expectWindowOfThree(['2001:db8:1:2::1', '2001:db8:1:2:ffff:ffff:ffff:ffff', '2001:DB8:1:2:abcd::9']);
    const next = await from('2001:db8:1:3::1');
    expect(next.status).toBe(401);
    expect(next.headers.ratelimit).toMatch(/^"default";r=2;t=\d+$/);
  });
});
