import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import request from 'supertest';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { RedisGate } from '../../src/redis/redis-gate.js';
import { REDIS_OPTIONS } from '../../src/redis/redis.module.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { cliJson } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/listen.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { isolatedConfig } from '../helpers/test-config.js';

const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';

/**
 * A partner's requests under RATE_LIMIT_PER_MINUTE=3 counted in the process: two answered, the
 * third refused with a 429 and Retry-After. Gives the request, to ask again.
 */
async function limitedPerProcess(t: TestApp): Promise<() => request.Test> {
  const partner = await issueCredential(t);
  const token = await tokenFor(t.http, partner);
  const get = () => request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
  expect((await get()).status).toBe(200);
  expect((await get()).status).toBe(200);
  const refused = await get();
  expect(refused.status).toBe(429);
  expect(refused.headers['retry-after']).toBeDefined();
  return get;
}

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
    const shared = { ...env, MIGRATIONS_RUN: 'false', REDIS_URL, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '6', TOKEN_FAILURES_MAX: '3',
      // Counted in Redis whatever the machine's load: a count given up after a second would be made in the process.
      REDIS_COMMAND_TIMEOUT_MS: '20000' };
    services.push(await startService(shared), await startService(shared));
    // Ready does not wait for Redis (it would be degraded, counting in the process): a loaded
    // machine may start a service before its Redis connection is. Counted in Redis from here.
    for (const service of services) {
      const redisCheck = async () => ((await (await fetch(`${service.url}/health/ready`)).json()) as { info?: { redis?: { status?: string } } }).info?.redis?.status;
      expect(await eventually(redisCheck, (status) => status === 'up', 60_000)).toBe('up');
    }
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
    const resets: number[] = [];
    for (let i = 0; i < 7; i++) {
      // A pause before the refusals: a refused request must not push the window's end on.
      if (i === 5) await new Promise((resolve) => setTimeout(resolve, 1500));
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
      resets.push(reset);
    }
    // One token request and five data requests fill the six; each process alone saw three or
    // four. One window, whose end every answer of both processes gives to the millisecond: Redis's.
    expect({ statuses, remaining, legacy, windowEnds: new Set(resets).size }).toEqual({
      statuses: [200, 200, 200, 200, 200, 429, 429],
      remaining: ['"default";r=4', '"default";r=3', '"default";r=2', '"default";r=1', '"default";r=0', '"default";r=0', '"default";r=0'],
      legacy: ['6/4', '6/3', '6/2', '6/1', '6/0', '6/0', '6/0'],
      windowEnds: 1,
    });
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
    // The first guess sent again through B is no new one: it does not count.
    for (const [target, guess] of [[a, 'guess-1'], [b, 'guess-1'], [b, 'guess-2']] as const) expect((await ask(target, guess)).status).toBe(401);
    expect((await ask(a, victim.clientSecret)).status).toBe(200);
    expect((await ask(a, 'guess-3')).status).toBe(401);
    for (const target of [b, a]) {
      const refused = await ask(target, victim.clientSecret);
      expect(refused.status).toBe(429);
      expect(await refused.json()).toEqual({
        error: 'slow_down',
        error_description: expect.stringMatching(/^Too many failed token requests for this client; retry after (?:1 second|\d+ seconds)\.$/),
      });
      const retryAfter = Number(refused.headers.get('retry-after'));
      expect(retryAfter).toBeGreaterThan(800);
      expect(retryAfter).toBeLessThanOrEqual(900);
    }
    // One key per client id, under the prefix, naming a digest of the id, expiring with the window.
    const redis = new Redis(REDIS_URL);
    try {
      const [key, ...others] = (await redis.keys(`${prefix}tf:*`)).sort();
      expect(key).toMatch(/^test:[0-9a-f]{12}:tf:[\w-]{22}$/);
      expect(key).not.toContain(victim.clientId);
      expect(await redis.get(key)).toBe('3');
      // Beside the count, the window's guesses: digests, not the secrets tried, expiring with it.
      expect(others).toEqual([`${key}:g`]);
      const guesses = await redis.smembers(`${key}:g`);
      expect(guesses).toHaveLength(3);
      for (const guess of guesses) expect(guess).toMatch(/^[\w-]{22}$/);
      for (const name of [key, `${key}:g`]) {
        const ttl = await redis.pttl(name);
        expect(ttl).toBeGreaterThan(800_000);
        expect(ttl).toBeLessThanOrEqual(900_000);
      }
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
    await limitedPerProcess(t);

    const ready = await request(t.http).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({
      status: 'degraded',
      info: { database: { status: 'up' }, migrations: { status: 'up' } },
    });
    expect(ready.body.info.redis).toEqual({ status: 'degraded', message: 'unreachable: rate limits counted per process' });

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
    // The same wrong secret again is no new guess; another one is the second.
    expect((await ask('a-guess')).status).toBe(401);
    expect((await ask('another-guess')).status).toBe(401);
    const refused = await ask(victim.clientSecret);
    expect(refused.status).toBe(429);
    expect(refused.body).toEqual({
      error: 'slow_down',
      error_description: expect.stringMatching(/^Too many failed token requests for this client; retry after (?:1 second|\d+ seconds)\.$/),
    });
    // Each of the four requests checked the lockout, the three failures were counted one each.
    const metrics = await t.app.get(MetricsService).registry.metrics();
    expect(metrics).toMatch(/^results_token_failure_store_fallbacks_total 7$/m);
  });
});

describe(`a Redis that stops answering (${process.env.TEST_DATABASE})`, () => {
  let proxy: TcpProxy;
  const logged: string[] = [];
  const logger = { warn: (m: string) => void logged.push(`warn: ${m}`), log: (m: string) => void logged.push(`log: ${m}`) };
  let client: Redis;
  let gate: RedisGate;
  const key = `test:${randomBytes(6).toString('hex')}:gate`;

  beforeAll(async () => {
    const { port } = new URL(REDIS_URL);
    proxy = new TcpProxy({ host: '127.0.0.1', port: Number(port || 6379) }, await freePort());
    await proxy.start();
    client = new Redis(`redis://127.0.0.1:${proxy.port}`, { ...REDIS_OPTIONS, commandTimeout: 200 });
    gate = new RedisGate(client, 50, logger);
    await eventually(() => Promise.resolve(client.status), (status) => status === 'ready', 30_000, 20);
  });
  afterAll(async () => {
    gate.close();
    proxy.release();
    await client.del(key).catch(() => 0);
    client.disconnect();
    await proxy.stop();
  });

  it('is not sent commands after one went unanswered, until it answers a PING again; both are logged', async () => {
    expect(await gate.run((r) => r.incr(key))).toEqual({ ok: true, value: 1 });
    proxy.hold();
    // This one reaches Redis; its answer does not come back within the command timeout.
    expect(await gate.run((r) => r.incr(key))).toEqual({ ok: false, reason: 'Command timed out' });
    expect(gate.unanswering).toBe(true);
    for (let i = 0; i < 5; i++) expect(await gate.run((r) => r.incr(key))).toEqual({ ok: false, reason: 'Redis is not answering' });
    expect(logged).toEqual([expect.stringMatching(/^warn: not answering within its command timeout: rate limits and token failures are counted per process/)]);

    proxy.release();
    await eventually(() => Promise.resolve(gate.unanswering), (shut) => !shut, 30_000, 20);
    expect(logged).toEqual([expect.any(String), 'log: answering again: rate limits and token failures are shared by the replicas again']);
    // The five commands held back never reached Redis: the count goes on from the two that did.
    expect(await gate.run((r) => r.incr(key))).toEqual({ ok: true, value: 3 });
  });

  it('answers again after answers were lost on the way, the connection left open', async () => {
    await client.set(key, '10');
    proxy.dropping = true;
    try {
      expect(await gate.run((r) => r.incr(key))).toEqual({ ok: false, reason: 'Command timed out' });
      expect(gate.unanswering).toBe(true);
    } finally {
      proxy.dropping = false;
    }
    // On the connection the answer was lost on, each later answer would go to the command before it.
    await eventually(() => Promise.resolve(gate.unanswering), (shut) => !shut, 10_000, 20);
    expect(logged.at(-1)).toBe('log: answering again: rate limits and token failures are shared by the replicas again');
    // The unanswered command reached Redis once, and was not sent again.
    expect(await gate.run((r) => r.incr(key))).toEqual({ ok: true, value: 12 });
  });

  it('says why a command was not run when there is no Redis, or it is not connected', async () => {
    expect(await new RedisGate(null, 50, logger).run((r) => r.ping())).toEqual({ ok: false, reason: 'no Redis is configured' });
    const away = new Redis('redis://127.0.0.1:1', { ...REDIS_OPTIONS, lazyConnect: true });
    expect(await new RedisGate(away, 50, logger).run((r) => r.ping())).toEqual({ ok: false, reason: 'Redis is wait' });
    away.disconnect();
  });
});

describe(`the service with a Redis that stops answering (${process.env.TEST_DATABASE})`, () => {
  let proxy: TcpProxy;
  let t: TestApp;
  const prefix = `test:${randomBytes(6).toString('hex')}:`;

  beforeAll(async () => {
    const { port } = new URL(REDIS_URL);
    proxy = new TcpProxy({ host: '127.0.0.1', port: Number(port || 6379) }, await freePort());
    await proxy.start();
    t = await startTestApp({ REDIS_URL: `redis://127.0.0.1:${proxy.port}`, REDIS_KEY_PREFIX: prefix, RATE_LIMIT_PER_MINUTE: '100' });
    await seedClients(t);
    await eventually(() => Promise.resolve(t.app.get(RedisGate).redis?.status), (status) => status === 'ready', 30_000, 20);
  });
  afterAll(async () => {
    proxy.release();
    await t.close();
    await proxy.stop();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('waits out the command timeout once, then serves without asking Redis, counting per process', async () => {
    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const get = () => request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    const counted = async (): Promise<number> => {
      const redis = new Redis(REDIS_URL);
      const keys = (await redis.keys(`${prefix}rl:*`)).filter((k) => !k.endsWith(':blocked'));
      const values = keys.length > 0 ? await redis.mget(...keys) : [];
      await redis.quit();
      return values.reduce((sum, v) => sum + Number(v ?? 0), 0);
    };
    expect((await get()).status).toBe(200);
    const before = await counted();
    proxy.hold();
    for (let i = 0; i < 4; i++) {
      const res = await get();
      expect(res.status).toBe(200);
      expect(res.headers['ratelimit-policy']).toMatch(/"default";q=100;/);
    }
    expect(t.app.get(RedisGate).unanswering).toBe(true);
    // Only the first of the four reached Redis (its answer was held back).
    expect(await counted()).toBe(before + 1);
    const metrics = await t.app.get(MetricsService).registry.metrics();
    expect(metrics).toMatch(/^results_rate_limit_store_fallbacks_total 4$/m);
  });
});

/**
 * A Redis of the test's own (the shared one is never reconfigured) that answers, but refuses
 * every write: `maxmemory` below what it holds, with the noeviction policy, answers each INCR
 * and EVAL with an OOM error, while PING still answers.
 */
describe(`a Redis that answers commands with errors (${process.env.TEST_DATABASE})`, () => {
  let server: ChildProcess;
  let url: string;
  let admin: Redis;
  const refuseWrites = async () => {
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'maxmemory', '1');
  };
  const takeWrites = () => admin.config('SET', 'maxmemory', '0');

  beforeAll(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    server = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' });
    admin = new Redis(url, { lazyConnect: true, retryStrategy: () => 100 });
    await eventually(() => admin.ping().catch(() => 'not yet'), (answer) => answer === 'PONG', 30_000, 50);
  });
  afterAll(() => {
    admin.disconnect();
    server.kill('SIGKILL');
  });

  describe('the gate', () => {
    const logged: string[] = [];
    const logger = { warn: (m: string) => void logged.push(`warn: ${m}`), log: (m: string) => void logged.push(`log: ${m}`) };
    let client: Redis;
    let gate: RedisGate;

    beforeAll(async () => {
      client = new Redis(url, REDIS_OPTIONS);
      gate = new RedisGate(client, 50, logger);
      await eventually(() => Promise.resolve(client.status), (status) => status === 'ready', 30_000, 20);
    });
    afterAll(async () => {
      gate.close();
      client.disconnect();
      await takeWrites();
    });

    it('says once that Redis refuses commands, counts per process meanwhile, and says when a command succeeds again', async () => {
      expect(await gate.run((r) => r.incr('gate'))).toEqual({ ok: true, value: 1 });
      await refuseWrites();
      for (let i = 0; i < 3; i++) {
        expect(await gate.run((r) => r.incr('gate'))).toEqual({ ok: false, reason: expect.stringMatching(/^OOM command not allowed/) });
      }
      // Before the fix nothing was said (a debug line per request), and readiness said Redis was up.
      // A command that only reads is answered all the same: no recovery, no second line.
      expect(await gate.run((r) => r.get('gate'))).toEqual({ ok: true, value: '1' });
      expect(await gate.run((r) => r.incr('gate'))).toMatchObject({ ok: false });
      expect(gate.refusing).toBe(true);
      expect(gate.unanswering).toBe(false);
      expect(logged).toEqual([
        expect.stringMatching(/^warn: answering commands with errors \(OOM command not allowed[^)]*\): rate limits and token failures are counted per process until a command succeeds$/),
      ]);

      await takeWrites();
      // A success within the check interval (50 ms here) of the last refusal is no recovery yet.
      await new Promise((done) => setTimeout(done, 60));
      expect(await gate.run((r) => r.incr('gate'))).toEqual({ ok: true, value: 2 });
      expect(gate.refusing).toBe(false);
      expect(logged.at(-1)).toBe('log: commands succeed again: rate limits and token failures are shared by the replicas again');
      expect(logged).toHaveLength(2);
    });
  });

  describe('the service', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await startTestApp({ REDIS_URL: url, RATE_LIMIT_PER_MINUTE: '3' });
      await seedClients(t);
      await eventually(() => Promise.resolve(t.app.get(RedisGate).redis?.status), (status) => status === 'ready', 30_000, 20);
    });
    afterAll(async () => {
      await t.close();
      await takeWrites();
    });

    it('keeps serving, limits per process, reports Redis degraded, and is ready on Redis again once it takes writes', async () => {
      await refuseWrites();
      const get = await limitedPerProcess(t);

      const ready = await request(t.http).get('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body.status).toBe('degraded');
      expect(ready.body.info.redis).toEqual({ status: 'degraded', message: 'answering with errors: rate limits counted per process' });
      const metrics = await t.app.get(MetricsService).registry.metrics();
      expect(metrics).toMatch(/^results_rate_limit_store_fallbacks_total [3-9]$/m);

      await takeWrites();
      // Counted in Redis again, from a window of its own there; Redis is up again once a count
      // succeeds the recheck interval (5 s) after the last refusal.
      const redisStatus = async () => {
        expect([200, 429]).toContain((await get()).status);
        return ((await request(t.http).get('/health/ready')).body as { info: { redis: unknown } }).info.redis;
      };
      expect(await eventually(redisStatus, (redis) => (redis as { status: string }).status === 'up', 15_000, 500)).toEqual({ status: 'up' });
      expect(await admin.keys(`${t.config.REDIS_KEY_PREFIX}rl:*`)).not.toEqual([]);
    });
  });
});
