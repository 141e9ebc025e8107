import { randomBytes } from 'node:crypto';
import pg from 'pg';
import request from 'supertest';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { cli } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/listen.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const PG = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');

/** The database going away under a running service, and coming back. */
describe('database outage (postgres, through a TCP proxy)', () => {
  let proxy: TcpProxy;
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    proxy = new TcpProxy({ host: PG.hostname, port: Number(PG.port || 5432) }, await freePort());
    await proxy.start();
    const viaProxy = new URL(PG.toString());
    viaProxy.port = String(proxy.port);
    // The auth cache would hide the outage from the guards for a while; here every request reads.
    t = await startTestApp({ DATABASE_URL: viaProxy.toString(), DATABASE_QUERY_TIMEOUT_MS: '2000', AUTH_CACHE_SECONDS: '0' });
    await seedClients(t);
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
  });
  afterAll(async () => {
    await proxy.restore();
    await t.close();
    await proxy.stop();
  });

  const branches = () => request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);

  it('answers 503 with Retry-After within a bounded time, fails readiness, and recovers without a restart', async () => {
    expect((await branches()).status).toBe(200);

    await proxy.cut();
    const started = Date.now();
    const down = await branches();
    expect(Date.now() - started).toBeLessThan(6000);
    expect(down.status).toBe(503);
    expect(down.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(down.headers['retry-after']).toBe('5');
    expect(JSON.parse(down.text)).toMatchObject({
      title: 'Service Unavailable',
      status: 503,
      detail: 'The database is unavailable; retry after the time in Retry-After.',
    });
    // A token request too: the token lane cannot tell whose the key is and leaves it to Express, which says the database is away.
    const tokenDown = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: partner.clientId, client_secret: partner.clientSecret });
    expect(tokenDown.status).toBe(503);
    expect(tokenDown.headers['retry-after']).toBe('5');
    // In the token endpoint's own format, as every answer of it (OAuth libraries read `error`).
    expect(tokenDown.headers['cache-control']).toBe('no-store');
    expect(tokenDown.body).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'The database is unavailable; retry after the time in Retry-After.',
    });
    const ready = await request(t.http).get('/health/ready');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.text).detail).toMatch(/^Not ready: .*database.* failed\.$/);
    expect((await request(t.http).get('/health/live')).status).toBe(200);

    await proxy.restore();
    expect(await eventually(async () => (await branches()).status, (status) => status === 200, 30_000)).toBe(200);
    expect((await request(t.http).get('/health/ready')).status).toBe(200);
  });

  it('answers 503 when the database stops answering, bounded by the query timeout', async () => {
    proxy.delayMs = 60_000;
    try {
      const started = Date.now();
      const res = await branches();
      expect(res.status).toBe(503);
      // The query timeout (2 s) ends the wait, not the database's 60 s: room for a busy machine.
      expect(Date.now() - started).toBeLessThan(20_000);
    } finally {
      proxy.delayMs = 0;
      await proxy.cut();
      await proxy.restore();
    }
    expect(await eventually(async () => (await branches()).status, (status) => status === 200, 30_000)).toBe(200);
  });
  it('keeps no connection that waits on an answer lost on the way: every request is answered once the database answers again', async () => {
    expect((await branches()).status).toBe(200);
    proxy.dropping = true;
    try {
      const lost = await Promise.all([branches(), branches(), branches()]);
      expect(lost.map((res) => res.status)).toEqual([503, 503, 503]);
    } finally {
      proxy.dropping = false;
    }
    // A lookup that failed fails again for a second without asking (AuthCacheService): past it.
    await new Promise((resolve) => setTimeout(resolve, 1100));
    // The pool hands out the client given back last first: one still waiting on its lost answer
    // would fail the next request after the query timeout, and every one after it.
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await branches()).status);
    expect(statuses).toEqual(Array.from({ length: 12 }, () => 200));
    expect((await request(t.http).get('/health/ready')).status).toBe(200);
  });
});

/**
 * The database closed to new connections, as for maintenance or before a restore (`ALTER DATABASE
 * … ALLOW_CONNECTIONS false`, its sessions ended): on a database of the test's own.
 */
describe('database closed to new connections (postgres)', () => {
  const admin = new pg.Client({ connectionString: PG.toString() });
  const name = `rs_closed_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${name}`);
    const url = new URL(PG.toString());
    url.pathname = `/${name}`;
    t = await startTestApp({ DATABASE_URL: url.toString(), DATABASE_QUERY_TIMEOUT_MS: '2000', AUTH_CACHE_SECONDS: '0' });
    await seedClients(t);
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
  });
  afterAll(async () => {
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    await t.close();
    await admin.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await admin.end();
  });

  const branches = () => request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);

  it('answers 503 with Retry-After (not a 500), fails readiness, is one line to the CLI, and recovers once it takes connections again', async () => {
    expect((await branches()).status).toBe(200);
    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS false`);
    await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [name]);

    // Before the fix: 500 "An internal error occurred", logged as an error with its stack, on every request.
    for (let i = 0; i < 3; i++) {
      const down = await branches();
      expect(down.status).toBe(503);
      expect(down.headers['retry-after']).toBe('5');
      expect(JSON.parse(down.text)).toMatchObject({ status: 503, detail: 'The database is unavailable; retry after the time in Retry-After.' });
    }
    const tokenDown = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: partner.clientId, client_secret: partner.clientSecret });
    expect([tokenDown.status, tokenDown.body.error]).toEqual([503, 'temporarily_unavailable']);
    const ready = await request(t.http).get('/health/ready');
    expect(ready.status).toBe(503);
    expect(JSON.parse(ready.text).detail).toMatch(/^Not ready: .*database.* failed\.$/);
    // The CLI says it in one line (exit 2), not as an unexpected error with its stack.
    const command = await cli(['clients', 'add', '--id', '1002', '--name', 'Closed'], t.env);
    expect([command.code, command.stderr.trim()]).toEqual([2, `error: the database cannot be used: database "${name}" is not currently accepting connections`]);

    await admin.query(`ALTER DATABASE ${name} ALLOW_CONNECTIONS true`);
    expect(await eventually(async () => (await branches()).status, (status) => status === 200, 30_000)).toBe(200);
    expect((await request(t.http).get('/health/ready')).status).toBe(200);
  }, 60_000);
});

/**
 * A statement that waits for a lock another session holds (an operator's `LOCK TABLE`, a
 * migration) on a database whose sessions have a `lock_timeout` (the URL's own options, or the
 * database's or role's settings): the server ends the wait as the statement timeout does.
 */
describe('a lock held by another session past the lock timeout (postgres)', () => {
  const admin = new pg.Client({ connectionString: PG.toString() });
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    const url = new URL(PG.toString());
    url.searchParams.set('options', '-c lock_timeout=300');
    t = await startTestApp({ DATABASE_URL: url.toString(), AUTH_CACHE_SECONDS: '0' });
    await seedClients(t);
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
    await admin.connect();
  });
  afterAll(async () => {
    await admin.end();
    await t.close();
  });

  const branches = () => request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);

  it('answers 503 with Retry-After (not a 500) while the lock is held, and 200 once it is let go', async () => {
    expect((await branches()).status).toBe(200);
    await admin.query('BEGIN');
    try {
      await admin.query(`LOCK TABLE "${t.config.DATABASE_SCHEMA}".branches IN ACCESS EXCLUSIVE MODE`);
      // Before the fix: 500 "An internal error occurred" (55P03, canceling statement due to lock timeout).
      const blocked = await branches();
      expect(blocked.status).toBe(503);
      expect(blocked.headers['retry-after']).toBe('5');
      expect(JSON.parse(blocked.text)).toMatchObject({ status: 503, detail: 'The database is unavailable; retry after the time in Retry-After.' });
    } finally {
      await admin.query('ROLLBACK');
    }
    expect((await branches()).status).toBe(200);
  });
});
