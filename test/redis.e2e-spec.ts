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

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], env);
    credential = await cliJson(['credentials', 'add', '--clients', '1001', '--scopes', 'branches/standard.read'], env);
    const shared = { ...env, MIGRATIONS_RUN: 'false', REDIS_URL, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '6' };
    services.push(await startService(shared), await startService(shared));
  });
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
