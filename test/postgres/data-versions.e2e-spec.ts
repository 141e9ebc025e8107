import { jest } from '@jest/globals';
import type { Logger } from '@nestjs/common';
import pg from 'pg';
import request from 'supertest';
import type { DataSource } from 'typeorm';
import { getDataSourceToken } from '@nestjs/typeorm';
import { ClientDataVersions } from '../../src/clients/data-versions.js';
import { dataVersionCommits, inTransaction, movesDataVersion } from '../../src/database/transaction.js';
import { eventually } from '../helpers/eventually.js';
import { seedClients } from '../helpers/auth.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { importVisits, startVisitsApp, type VisitRecord } from '../helpers/visits-fixture.js';

/**
 * A replica keeps the client data versions it has read and learns of every change from the
 * database's announcements, so a page request costs no round trip for it; when it cannot
 * listen it reads per request, so it never serves a version older than the database's.
 */
describe('client data versions on PostgreSQL', () => {
  let t: TestApp;
  let visits: VisitRecord[];
  let versions: ClientDataVersions;
  let db: DataSource;
  /** Another writer: a connection of its own, as another replica or the CLI would have. */
  let other: pg.Client;

  // A change as every writer makes it: the write sequence, which is the version, and data_version with it.
  const bump = (): Promise<unknown> => other.query('UPDATE clients SET change_seq = change_seq + 1, data_version = data_version + 1 WHERE id = 1001');
  const stored = async (): Promise<number> =>
    Number(((await other.query('SELECT change_seq AS v FROM clients WHERE id = 1001')).rows[0] as { v: number }).v);
  const listening = (): Promise<boolean> => eventually(() => Promise.resolve(versions.isListening), Boolean, 30_000, 20);
  /** The reads of a client's version among what the spied data source was asked (the webhook poller asks it too). */
  const versionReads = (query: { mock: { calls: unknown[][] } }): unknown[][] =>
    query.mock.calls.filter(([sql]) => typeof sql === 'string' && sql.startsWith('SELECT change_seq AS v FROM clients'));

  /** A change by another writer while this replica does not listen: no announcement reaches it, and its next read of the version is a query. */
  async function changedAndReadPerRequest(): Promise<void> {
    await bump();
    const query = jest.spyOn(db, 'query');
    expect(await versions.current(1001)).toBe(await stored());
    expect(versionReads(query)).toHaveLength(1);
    query.mockRestore();
  }

  beforeAll(async () => {
    ({ t, visits } = await startVisitsApp());
    versions = t.app.get(ClientDataVersions);
    // Listening starts with the first version asked for.
    expect(versions.isListening).toBe(false);
    await versions.current(1001);
    db = t.app.get<DataSource>(getDataSourceToken());
    other = new pg.Client({ connectionString: t.config.DATABASE_URL, options: `-c search_path=${t.config.DATABASE_SCHEMA}` });
    await other.connect();
  });
  afterAll(async () => {
    await other.end();
    await t.close();
  });
  afterEach(() => jest.restoreAllMocks());

  it("keeps a version it has read, and learns of another writer's change without reading it", async () => {
    expect(await listening()).toBe(true);
    const before = await versions.current(1001);
    expect(before).toBe(await stored());
    const query = jest.spyOn(db, 'query');
    expect(await versions.current(1001)).toBe(before);
    await bump();
    // Moved on by the writer (and past the clock by the database: SequenceFollowsDataVersion).
    const bumped = await stored();
    expect(bumped).toBeGreaterThan(before!);
    const learned = await eventually(() => versions.current(1001), (v) => v === bumped, 30_000, 10);
    expect(learned).toBe(bumped);
    expect(versionReads(query)).toEqual([]);
  });

  it('sees what its own process commits on its next read; a rolled-back change moves nothing', async () => {
    const before = (await versions.current(1001))!;
    const commits = dataVersionCommits(db);
    const changed = { ...visits.find((v) => v.clientId === 1001)!, recommendComment: 'Changed, to move the data version.' };
    await importVisits(t, [changed]);
    expect(dataVersionCommits(db)).toBe(commits + 1);
    // The version is the write sequence, which the import moved on (to the clock, at least).
    const after = (await versions.current(1001))!;
    expect(after).toBe(await stored());
    expect(after).toBeGreaterThan(before);
    await expect(
      inTransaction(db, async (tx) => {
        movesDataVersion(tx);
        await tx.query('UPDATE clients SET change_seq = change_seq + 1, data_version = data_version + 1 WHERE id = 1001');
        throw new Error('rolled back');
      }),
    ).rejects.toThrow('rolled back');
    expect(dataVersionCommits(db)).toBe(commits + 1);
    expect(await versions.current(1001)).toBe(after);
  });

  it('reads per request while its listening connection is lost, and listens again', async () => {
    expect(await listening()).toBe(true);
    await versions.current(1001);
    const ended = await other.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
      `results-service versions ${t.config.DATABASE_SCHEMA}`.slice(0, 63),
    ]);
    expect(ended.rowCount).toBe(1);
    expect(await eventually(() => Promise.resolve(versions.isListening), (v) => !v, 30_000, 5)).toBe(false);
    await changedAndReadPerRequest();
    expect(await listening()).toBe(true);
    await versions.current(1001);
    await bump();
    const expected = await stored();
    expect(await eventually(() => versions.current(1001), (v) => v === expected, 30_000, 10)).toBe(expected);
  });
  it('finds out at its check that announcements no longer reach a connection that still answers (a pooler lent the session of its LISTEN), and reads per request', async () => {
    expect(await listening()).toBe(true);
    await versions.current(1001);
    // What a pooler in transaction mode does to a LISTEN once it lends its session to another
    // client: the connection answers on, the announcements go elsewhere.
    await (versions as unknown as { client: pg.Client }).client.query('UNLISTEN *');
    await versions.verify();
    expect(versions.isListening).toBe(false);
    await changedAndReadPerRequest();
    // Listening again on a connection of its own, which hears.
    expect(await listening()).toBe(true);
    await versions.verify();
    expect(versions.isListening).toBe(true);
  });

  it('forgets kept versions when its check finds the clients table missing or made again, as a restore leaves it (no announcement comes)', async () => {
    expect(await listening()).toBe(true);
    const kept = (await versions.current(1001))!;
    // The restore: the table dropped and made again, holding the backup's (lower) version, without a word on the channel.
    await other.query('ALTER TABLE clients RENAME TO clients_before_restore');
    try {
      await versions.verify();
      const query = jest.spyOn(db, 'query');
      await expect(versions.current(1001)).rejects.toThrow(/clients/);
      expect(versionReads(query)).toHaveLength(1);
      query.mockRestore();
      await other.query('CREATE TABLE clients (LIKE clients_before_restore INCLUDING DEFAULTS)');
      await other.query('INSERT INTO clients SELECT * FROM clients_before_restore');
      await other.query('UPDATE clients SET change_seq = change_seq - 10 WHERE id = 1001');
      await versions.verify();
      expect(await versions.current(1001)).toBe(kept - 10);
    } finally {
      await other.query('DROP TABLE IF EXISTS clients');
      await other.query('ALTER TABLE clients_before_restore RENAME TO clients');
    }
    await versions.verify();
    expect(await versions.current(1001)).toBe(kept);
  });
});

/**
 * A server that ends idle sessions (`idle_session_timeout`, PostgreSQL 14 and later, as managed
 * databases set it): the listening connection is idle by design, between its checks.
 */
describe('client data versions on a server that ends idle sessions', () => {
  let t: TestApp;
  let versions: ClientDataVersions;

  beforeAll(async () => {
    // A minute: never reached while the test runs (a start on a loaded machine can leave a
    // session idle for longer than a shorter one, which then ended the start itself). The
    // listener's own setting tells whether it would be ended.
    const url = new URL(process.env.DATABASE_URL!);
    url.searchParams.set('options', '-c idle_session_timeout=60000');
    t = await startTestApp({ DATABASE_URL: url.toString() });
    await seedClients(t);
    versions = t.app.get(ClientDataVersions);
    await versions.current(1001);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('keeps listening: its own session is not ended for being idle', async () => {
    expect(await eventually(() => Promise.resolve(versions.isListening), Boolean, 30_000, 20)).toBe(true);
    // The service's sessions have the server's setting (here the URL's)...
    expect(await t.app.get<DataSource>(getDataSourceToken()).query('SHOW idle_session_timeout')).toEqual([{ idle_session_timeout: '1min' }]);
    // ...and the listener's own is off. Before the fix the server ended the listener each time it
    // had been idle that long: a warning each time ("not listening for data version changes
    // (terminating connection due to idle-session timeout)"), and versions read per request
    // until it listened again.
    const listener = (versions as unknown as { client: pg.Client }).client;
    expect((await listener.query<{ idle_session_timeout: string }>('SHOW idle_session_timeout')).rows).toEqual([{ idle_session_timeout: '0' }]);
    expect(versions.isListening).toBe(true);
  });
});

/**
 * A listening connection the announcements never reach, as behind a pooler in transaction mode
 * (PgBouncer's pool_mode = transaction), which answers the LISTEN and then gives the session
 * that ran it to other clients. Here DATABASE_DIRECT_URL names another database of the same
 * server, where a LISTEN is answered just as well and nothing this database announces arrives.
 */
describe('client data versions when the announcements do not reach the listener', () => {
  let t: TestApp;
  let versions: ClientDataVersions;
  let elsewhere: pg.Client;

  beforeAll(async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = '/postgres';
    t = await startTestApp({ DATABASE_DIRECT_URL: url.toString() });
    await seedClients(t);
    elsewhere = new pg.Client({ connectionString: url.toString() });
    await elsewhere.connect();
    // The schema, so that the listener gets as far as its LISTEN there.
    await elsewhere.query(`CREATE SCHEMA IF NOT EXISTS ${t.config.DATABASE_SCHEMA}`);
    versions = t.app.get(ClientDataVersions);
  });
  afterAll(async () => {
    await elsewhere?.query(`DROP SCHEMA IF EXISTS ${t.config.DATABASE_SCHEMA}`);
    await elsewhere?.end();
    await t?.close();
  });

  it('does not trust its LISTEN: it says why, and reads every version per request, so a change by another writer is seen at once', async () => {
    const warned = jest.spyOn((versions as unknown as { logger: Logger }).logger, 'warn').mockImplementation(() => undefined);
    await versions.current(1001);
    const [message] = await eventually(() => Promise.resolve(warned.mock.calls.map(([m]) => String(m))), (m) => m.length > 0, 30_000, 20);
    expect(message).toMatch(/^not listening for data version changes \(a notification sent through DATABASE_URL did not reach the listening connection within 5000 ms .*DATABASE_DIRECT_URL/);
    expect(versions.isListening).toBe(false);
    // Before, this listener counted as listening: a version kept, and another writer's change unseen for up to a minute.
    const db = t.app.get<DataSource>(getDataSourceToken());
    const before = (await versions.current(1001))!;
    await db.query('UPDATE clients SET change_seq = change_seq + 1, data_version = data_version + 1 WHERE id = 1001');
    const [{ v }] = await db.query<{ v: string }[]>('SELECT change_seq AS v FROM clients WHERE id = 1001');
    expect(Number(v)).toBeGreaterThan(before);
    expect(await versions.current(1001)).toBe(Number(v));
  });
});

/**
 * A listening connection lost while it waits for its own notification (see hears): a
 * database restart, a network blip while the pool is busy. The next connection hears its
 * echo; the lost one's wait must neither outlive it nor speak for its successor.
 */
describe('client data versions when the listening connection is lost while it waits for its echo', () => {
  let t: TestApp;
  let versions: ClientDataVersions;
  let other: pg.Client;

  beforeAll(async () => {
    t = await startTestApp();
    await seedClients(t);
    versions = t.app.get(ClientDataVersions);
    other = new pg.Client({ connectionString: t.config.DATABASE_URL });
    await other.connect();
  });
  afterAll(async () => {
    await other?.end();
    await t?.close();
  });

  it('reports notifications reaching the process once the next connection heard its echo', async () => {
    const db = t.app.get<DataSource>(getDataSourceToken());
    const query = db.query.bind(db);
    let lostOne = false;
    jest.spyOn(db, 'query').mockImplementation(async (sql: string, parameters?: Parameters<DataSource['query']>[1]) => {
      if (!lostOne && sql.startsWith('SELECT pg_notify')) {
        lostOne = true;
        // The first listening connection is ended before its echo is sent: it never hears it.
        const listener = (versions as unknown as { client: pg.Client | null }).client;
        await other.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
          `results-service versions ${t.config.DATABASE_SCHEMA}`.slice(0, 63),
        ]);
        await eventually(() => Promise.resolve((versions as unknown as { client: pg.Client | null }).client !== listener), Boolean, 10_000, 5);
      }
      return query(sql, parameters);
    });
    await versions.current(1001);
    expect(await eventually(() => Promise.resolve(versions.isListening), Boolean, 30_000, 20)).toBe(true);
    expect(lostOne).toBe(true);
    // Past the lost connection's echo timeout (5 s): before, it ran out then and marked the
    // process deaf while its successor listened, for as long as that one stayed up.
    await new Promise((resolve) => setTimeout(resolve, 6_000));
    expect(versions.isListening).toBe(true);
    expect(versions.notificationsMissing).toBe(false);
    const ready = await request(t.http).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.headers['content-type']).toMatch(/^application\/json/);
    expect(ready.body).toMatchObject({ status: 'ok', details: { database: { status: 'up' } } });
    expect(ready.body.details).not.toHaveProperty('notifications');
  }, 60_000);
});

/**
 * A DATABASE_DIRECT_URL whose client cannot even be made: node-postgres reads the URL's
 * certificate file (sslrootcert) as it makes the client, which a start, using DATABASE_URL
 * only, never does; a mounted secret being swapped leaves it missing for a moment too.
 */
describe('client data versions when the listening client cannot be made', () => {
  let t: TestApp;
  let versions: ClientDataVersions;
  const unhandled: unknown[] = [];
  const record = (reason: unknown): void => void unhandled.push(reason);

  beforeAll(async () => {
    const url = new URL(process.env.DATABASE_URL!);
    url.searchParams.set('sslmode', 'verify-full');
    url.searchParams.set('sslrootcert', '/nonexistent/results-ca.pem');
    t = await startTestApp({ DATABASE_DIRECT_URL: url.toString() });
    await seedClients(t);
    versions = t.app.get(ClientDataVersions);
    process.on('unhandledRejection', record);
  });
  afterAll(async () => {
    process.off('unhandledRejection', record);
    await t?.close();
  });

  it('reads versions per request and says why, without a rejection nothing handles (which ends the process)', async () => {
    const warned = jest.spyOn((versions as unknown as { logger: Logger }).logger, 'warn').mockImplementation(() => undefined);
    const db = t.app.get<DataSource>(getDataSourceToken());
    const [{ v }] = await db.query<{ v: string }[]>('SELECT change_seq AS v FROM clients WHERE id = 1001');
    expect(await versions.current(1001)).toBe(Number(v));
    const [message] = await eventually(() => Promise.resolve(warned.mock.calls.map(([m]) => String(m))), (m) => m.length > 0, 10_000, 20);
    expect(message).toMatch(/^not listening for data version changes \(ENOENT: no such file or directory, open '\/nonexistent\/results-ca.pem'\); versions are read per request, listening again in 500 ms$/);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(unhandled).toEqual([]);
    expect(versions.isListening).toBe(false);
    // Readiness says so (degraded, still ready): the process never listened.
    expect(versions.notificationsMissing).toBe(true);
    const ready = await request(t.http).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.headers['content-type']).toMatch(/^application\/json/);
    expect(ready.body).toMatchObject({
      status: 'degraded',
      details: { notifications: { status: 'degraded', message: 'not reaching this process: data versions read per request' }, database: { status: 'up' } },
    });
  });
});
