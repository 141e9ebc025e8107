import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import request from 'supertest';
import { MetricsService } from '../src/metrics/metrics.service.js';
import { issueCredential, seedClients, tokenFor } from './helpers/auth.js';
import { cliJson } from './helpers/cli.js';
import { startService, type ServiceProcess } from './helpers/service-process.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { isolatedConfig } from './helpers/test-config.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

describe(`two service processes sharing one Redis (${process.env.TEST_DATABASE})`, () => {
  const { env, drop } = isolatedConfig();
  const prefix = `test:${randomBytes(6).toString('hex')}:`;
  const services: ServiceProcess[] = [];
  let credential: { clientId: string; clientSecret: string; apiKey: string };
  let victim: { clientId: string; clientSecret: string; apiKey: string };

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], env);
    credential = await cliJson(['credentials', 'add', '--clients', '1001', '--scopes', 'branches/standard.read'], env);
    victim = await cliJson(['credentials', 'add', '--clients', '1001', '--scopes', 'branches/standard.read'], env);
    const shared = { ...env, MIGRATIONS_RUN: 'false', REDIS_URL, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '6', TOKEN_FAILURES_MAX: '3' };
    services.push(await startService(shared), await startService(shared));
    // Four CLI runs and two service starts: minutes on a loaded machine.
  }, 240_000);
  afterAll(async () => {
    await Promise.all(services.map((s) => s.stop()));
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await drop();
  });

  it('enforce one limit: the requests of both count against the same key', async () => {
    const [a, b] = services as [ServiceProcess, ServiceProcess];
    const tokenRes = await fetch(`${a.url}/connect/token`, {
      method: 'POST',
      headers: { 'svc-api-key': credential.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret }),
    });
    expect(tokenRes.status).toBe(200);
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const statuses: number[] = [];
    const remaining: string[] = [];
    const legacy: string[] = [];
    for (let i = 0; i < 7; i++) {
      const target = i % 2 === 0 ? b : a;
      const before = Date.now();
      const res = await fetch(`${target.url}/branches?SvcClientId=1001`, {
        headers: { 'svc-api-key': credential.apiKey, authorization: `Bearer ${token}` },
      });
      const after = Date.now();
      statuses.push(res.status);
      remaining.push(res.headers.get('ratelimit')?.replace(/;t=\d+$/, '') ?? '');
      legacy.push(`${res.headers.get('x-rate-limit-limit')}/${res.headers.get('x-rate-limit-remaining')}`);
      // The reset is the shared window's end: within a second of now + t.
      const t = Number(/;t=(\d+)$/.exec(res.headers.get('ratelimit') ?? '')?.[1]) * 1000;
      const reset = Date.parse(res.headers.get('x-rate-limit-reset') ?? '');
      expect(reset).toBeGreaterThan(before + t - 1000);
      expect(reset).toBeLessThanOrEqual(after + t);
    }
    // One token request and five data requests fill the six; each process alone saw three or four.
    expect(statuses).toEqual([200, 200, 200, 200, 200, 429, 429]);
    expect(remaining).toEqual(['"default";r=4', '"default";r=3', '"default";r=2', '"default";r=1', '"default";r=0', '"default";r=0', '"default";r=0']);
    expect(legacy).toEqual(['6/4', '6/3', '6/2', '6/1', '6/0', '6/0', '6/0']);
  });

  it('share the token-failure lockout: failures spread over both lock the client id out on each', async () => {
    const [a, b] = services as [ServiceProcess, ServiceProcess];
    const ask = (target: ServiceProcess, secret: string) =>
      fetch(`${target.url}/connect/token`, {
        method: 'POST',
        headers: { 'svc-api-key': victim.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ grant_type: 'client_credentials', client_id: victim.clientId, client_secret: secret }),
      });
    // Three failures, two through A and one through B: neither process saw the three alone.
    for (const target of [a, b, a]) expect((await ask(target, 'a-guess')).status).toBe(401);
    for (const target of [b, a]) {
      const refused = await ask(target, victim.clientSecret);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toEqual({
        error: 'slow_down',
        error_description: expect.stringMatching(/^Too many failed token requests for this client; retry after \d+ seconds\.$/),
      });
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(800);
      expect(retryAfter).toBeLessThanOrEqual(900);
    }
    // One key per client id, under the prefix, naming a digest of the id, expiring with the window.
    const redis = new Redis(REDIS_URL);
    try {
      const keys = await redis.keys(`${prefix}tf:*`);
      expect(keys).toEqual([expect.stringMatching(/^test:[0-9a-f]{12}:tf:[\w-]{22}$/)]);
      expect(keys[0]).not.toContain(victim.clientId);
      expect(await redis.get(keys[0])).toBe('3');
      const ttl = await redis.pttl(keys[0]);
      expect(ttl).toBeGreaterThan(800_000);
      expect(ttl).toBeLessThanOrEqual(900_000);
    } finally {
      await redis.quit();
    }
  });
});

describe(`Redis unreachable (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    // Nothing listens on port 1: every Redis command fails at once.
    t = await startTestApp({ REDIS_URL: 'redis://127.0.0.1:1', RATE_LIMIT_PER_MINUTE: '3' });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('keeps serving, limits per process, reports Redis degraded and counts the fallbacks', async () => {
    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const get = () => request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    expect((await get()).status).toBe(200);
    expect((await get()).status).toBe(200);
    const refused = await get();
    expect(refused.status).toBe(429);
    expect(refused.headers['retry-after']).toBeDefined();

    const ready = await request(t.http).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'degraded',
      info: { database: { status: 'up' }, migrations: { status: 'up' } },
    });
    expect(ready.body.info.redis).toEqual({ status: 'degraded', message: expect.stringMatching(/^unreachable \(.*\): rate limits counted per process$/) });

    const metrics = await t.app.get(MetricsService).registry.metrics();
    expect(metrics).toMatch(/^results_rate_limit_store_fallbacks_total [3-9]$/m);
  });
});

describe(`token-failure lockout with Redis unreachable (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ REDIS_URL: 'redis://127.0.0.1:1', TOKEN_FAILURES_MAX: '2' });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('still locks a client id out, counting in the process, and counts the fallbacks', async () => {
    const victim = await issueCredential(t);
    const ask = (secret: string) =>
      request(t.http)
        .post('/connect/token')
        .set('svc-api-key', victim.apiKey)
        .type('form')
        .send({ grant_type: 'client_credentials', client_id: victim.clientId, client_secret: secret });
    expect((await ask('a-guess')).status).toBe(401);
    expect((await ask('a-guess')).status).toBe(401);
    const refused = await ask(victim.clientSecret);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'slow_down',
      error_description: expect.stringMatching(/^Too many failed token requests for this client; retry after \d+ seconds\.$/),
    });
    // Each of the three requests checked the lockout, the two failures counted one each.
    const metrics = await t.app.get(MetricsService).registry.metrics();
    expect(metrics).toMatch(/^results_token_failure_store_fallbacks_total 5$/m);
  });
});
