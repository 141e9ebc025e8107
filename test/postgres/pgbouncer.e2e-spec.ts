import { randomBytes } from 'node:crypto';
import { jest } from '@jest/globals';
import type { Logger } from '@nestjs/common';
import pg from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { ClientDataVersions } from '../../src/clients/data-versions.js';
import { ConfigError, loadConfig } from '../../src/config/app-config.js';
import { dataSourceOptions } from '../../src/database/data-source-options.js';
import { prepareSchema } from '../../src/database/migration-tools.js';
import { seedClients } from '../helpers/auth.js';
import { eventually } from '../helpers/eventually.js';
import { startBouncer, type Bouncer } from '../helpers/pgbouncer.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * The service behind PgBouncer in transaction mode, as the README sets it up: the sessions'
 * settings given to every server connection (here by the pooler's connect_query, standing for
 * the role's defaults), startup parameters ignored. A pooler in transaction mode lends a
 * session to a client for one transaction at a time: the LISTEN of the data-version listener
 * reached no notification, and the migrations' session lock stayed on a server connection.
 */
describe('the service behind PgBouncer in transaction mode (postgres)', () => {
  const schema = `t_pgb_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let bouncer: Bouncer;
  /** Another writer, on PostgreSQL itself: another replica or the CLI. */
  let other: pg.Client;
  const bump = (): Promise<unknown> => other.query(`UPDATE ${schema}.clients SET change_seq = change_seq + 1, data_version = data_version + 1 WHERE id = 1001`);
  const stored = async (): Promise<number> => Number((await other.query<{ v: string }>(`SELECT change_seq AS v FROM ${schema}.clients WHERE id = 1001`)).rows[0].v);
  const listenerOf = (t: TestApp): ClientDataVersions => t.app.get(ClientDataVersions);

  beforeAll(async () => {
    bouncer = await startBouncer('transaction', {
      results: `connect_query='SET search_path = ${schema}; SET datestyle = ISO; SET timezone = UTC; SET intervalstyle = postgres'`,
      // The sessions' settings with the role's statement_timeout, as the README gives it (a second).
      timed: `connect_query='SET search_path = ${schema}; SET datestyle = ISO; SET timezone = UTC; SET intervalstyle = postgres; SET statement_timeout = 1000'`,
      // The same database, its sessions left with the server's defaults.
      bare: '',
    });
    other = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await other.connect();
  });
  afterAll(async () => {
    await other?.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
    await other?.end();
    await bouncer?.stop();
  });

  it('refuses to start where the pooler drops the settings the sessions start with, naming the search path, and makes nothing', async () => {
    const config = loadConfig({ DATABASE_URL: bouncer.url('bare'), DATABASE_SCHEMA: schema, SEED_DEMO: 'false' });
    const refusal = await prepareSchema(config).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as ConfigError).problems[0]).toMatch(new RegExp(`^DATABASE_URL gives sessions without the settings the service starts them with \\(search_path is "\\$user", public, not ${schema}`));
    expect((await other.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount).toBe(0);
  });

  describe('without DATABASE_DIRECT_URL', () => {
    let t: TestApp;
    beforeAll(async () => {
      // Migrated at start through the pooler, as a replica with MIGRATIONS_RUN=true.
      t = await startTestApp({ DATABASE_URL: bouncer.url('results'), DATABASE_SCHEMA: schema });
      await seedClients(t);
    });
    afterAll(async () => {
      await t?.close();
    });

    it('leaves no lock of the migrations behind on a server connection', async () => {
      const held = await other.query("SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND objid = (hashtext($1)::bigint & 4294967295)", [
        `results-service:migrations:${schema}`,
      ]);
      expect(held.rowCount).toBe(0);
    });

    it('does not trust a LISTEN that hears nothing: it says so, and reads each version, so another writer\'s change is seen at once', async () => {
      const versions = listenerOf(t);
      const warned = jest.spyOn((versions as unknown as { logger: Logger }).logger, 'warn').mockImplementation(() => undefined);
      await versions.current(1001);
      const [message] = await eventually(() => Promise.resolve(warned.mock.calls.map(([m]) => String(m))), (m) => m.length > 0, 30_000, 20);
      expect(message).toMatch(/did not reach the listening connection within 5000 ms .*Set DATABASE_DIRECT_URL/);
      expect(versions.isListening).toBe(false);
      expect(await versions.current(1001)).toBe(await stored());
      // Before, the listener counted as listening here, and this version was kept for a minute.
      await bump();
      expect(await versions.current(1001)).toBe(await stored());
      warned.mockRestore();
      // Readiness says so, and stays ready: every page is still right.
      const ready = await request(t.http).get('/health/ready');
      expect(ready.status).toBe(200);
      expect(ready.body).toMatchObject({
        status: 'degraded',
        details: { database: { status: 'up' }, notifications: { status: 'degraded', message: 'not reaching this process: data versions read per request' } },
      });
    });
  });

  describe('with DATABASE_DIRECT_URL', () => {
    let t: TestApp;
    beforeAll(async () => {
      const direct = new URL(process.env.DATABASE_URL!);
      t = await startTestApp({ DATABASE_URL: bouncer.url('results'), DATABASE_DIRECT_URL: direct.toString(), DATABASE_SCHEMA: schema });
      await seedClients(t);
    });
    afterAll(async () => {
      await t?.close();
    });

    it("listens on PostgreSQL itself and learns of another writer's change", async () => {
      const versions = listenerOf(t);
      await versions.current(1001);
      expect(await eventually(() => Promise.resolve(versions.isListening), Boolean, 30_000, 20)).toBe(true);
      const before = await versions.current(1001);
      expect(before).toBe(await stored());
      await bump();
      const bumped = await stored();
      expect(await eventually(() => versions.current(1001), (v) => v === bumped, 30_000, 10)).toBe(bumped);
      const ready = await request(t.http).get('/health/ready');
      expect([ready.status, ready.body.status, Object.keys(ready.body.details as object).sort()]).toEqual([200, 'ok', ['database', 'migrations']]);
    });
  });

  it("gives a command's transactions its longer statement timeout where the pooler drops it, and leaves the pooled sessions' as they were", async () => {
    // A command's timeout (the CLI raises it to 10 minutes), which the pooler does not pass on:
    // the role's second applied, and an import's or a migration's long statement was cancelled.
    const config = loadConfig({ DATABASE_URL: bouncer.url('timed'), DATABASE_SCHEMA: schema, DATABASE_QUERY_TIMEOUT_MS: '5000', DATABASE_POOL_SIZE: '2', SEED_DEMO: 'false' });
    const db = new DataSource(dataSourceOptions(config));
    await db.initialize();
    try {
      const slept = await db.transaction((tx) => tx.query('SELECT pg_sleep(1.5) AS slept, current_setting($1) AS timeout', ['statement_timeout']));
      expect(slept).toEqual([{ slept: '', timeout: '5s' }]);
    } finally {
      await db.destroy();
    }
    // Not SET for the session: the next client the pooler gives that server connection to has the role's.
    const plain = new pg.Client({ connectionString: bouncer.url('timed') });
    await plain.connect();
    try {
      for (let i = 0; i < 5; i++) expect((await plain.query<{ statement_timeout: string }>('SHOW statement_timeout')).rows).toEqual([{ statement_timeout: '1s' }]);
    } finally {
      await plain.end();
    }
  });
});

/**
 * PgBouncer in session mode resets a server connection between clients (DISCARD ALL), which
 * undoes what a connect_query set: the first client's session had the service's search path,
 * the next one's the role's, and a command that the start's check let through failed on tables
 * it could not find (or would have used another schema's, in `public`).
 */
describe('the service behind PgBouncer in session mode, its settings set by a connect_query (postgres)', () => {
  const schema = `t_pgb_${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  let bouncer: Bouncer;

  beforeAll(async () => {
    bouncer = await startBouncer('session', {
      results: `connect_query='SET search_path = ${schema}; SET datestyle = ISO; SET timezone = UTC; SET intervalstyle = postgres'`,
    });
  });
  afterAll(async () => {
    await bouncer?.stop();
  });

  it('uses no connection of its pool whose session lost the settings: the statement waiting for it fails, naming them', async () => {
    const first = new pg.Client({ connectionString: bouncer.url('results') });
    await first.connect();
    expect((await first.query<{ search_path: string }>('SHOW search_path')).rows).toEqual([{ search_path: schema }]);
    await first.end();
    // The next client is given the same server connection, reset.
    const config = loadConfig({ DATABASE_URL: bouncer.url('results'), DATABASE_SCHEMA: schema, DATABASE_POOL_SIZE: '1', SEED_DEMO: 'false' });
    const db = new DataSource(dataSourceOptions(config));
    const refusal = await db.initialize().then(
      () => null,
      (error: unknown) => error as Error,
    );
    if (db.isInitialized) await db.destroy();
    expect(refusal?.message).toMatch(new RegExp(`^DATABASE_URL gives sessions without the settings the service starts them with \\(search_path is "\\$user", public, not ${schema}\\)`));
  });
});
