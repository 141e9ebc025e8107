import pg from 'pg';
import type { DataSource } from 'typeorm';
import { oneProcessAtATime, openDataSource } from '../../src/database/migration-tools.js';
import { eventually } from '../helpers/eventually.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * The lock that lets one process at a time run the migrations (or seed the demo) is held by a
 * transaction left open on a connection of its own, not by the session: behind a pooler in
 * transaction mode (PgBouncer's pool_mode = transaction) a session lock stayed on a server
 * connection the pooler gave to other clients, its unlock ran on another, and every later
 * start waited for it until it gave up.
 */
describe('one process at a time on PostgreSQL', () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  /** Another process's view of the server's locks. */
  let other: pg.Client;
  const key = `results-service:migrations:${config.DATABASE_SCHEMA}`;
  const holders = async (): Promise<{ state: string }[]> =>
    (
      await other.query<{ state: string }>(
        "SELECT a.state FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.objid = (hashtext($1)::bigint & 4294967295)",
        [key],
      )
    ).rows;

  beforeAll(async () => {
    db = await openDataSource(config);
    other = new pg.Client({ connectionString: config.DATABASE_URL });
    await other.connect();
  });
  afterAll(async () => {
    await other.end();
    await db.destroy();
    await drop();
  });

  it('holds the lock in a transaction while the work runs, lets it go after, and makes a second process wait for the first', async () => {
    const order: string[] = [];
    let during: { state: string }[] = [];
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const first = oneProcessAtATime(db, 'migrations', 'the migrations', async () => {
      order.push('first begins');
      during = await holders();
      await released;
      order.push('first ends');
    });
    while (order.length === 0) await new Promise((resolve) => setTimeout(resolve, 10));
    const second = oneProcessAtATime(db, 'migrations', 'the migrations', () => {
      order.push('second runs');
      return Promise.resolve();
    });
    // The second tries every 50 ms: some of its tries come and go while the first holds the lock.
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(order).toEqual(['first begins']);
    release();
    await Promise.all([first, second]);
    expect(order).toEqual(['first begins', 'first ends', 'second runs']);
    // Held by a transaction (idle in it while the work runs elsewhere), not by a session.
    expect(during).toEqual([{ state: 'idle in transaction' }]);
    expect(await holders()).toEqual([]);
  });

  it('lets a migration build an index CONCURRENTLY on a table with rows while it holds the lock', async () => {
    await db.query('CREATE TABLE lock_probe (n integer)');
    await db.query('INSERT INTO lock_probe SELECT generate_series(1, 1000)');
    // CONCURRENTLY waits for older transactions that hold a snapshot: the holder's must not be one.
    await oneProcessAtATime(db, 'migrations', 'the migrations', () => db.query('CREATE INDEX CONCURRENTLY lock_probe_n ON lock_probe (n)'));
    expect(await db.query("SELECT indexname FROM pg_indexes WHERE tablename = 'lock_probe'")).toEqual([{ indexname: 'lock_probe_n' }]);
  });

  it('lets the lock go when the work fails', async () => {
    await expect(oneProcessAtATime(db, 'migrations', 'the migrations', () => Promise.reject(new Error('failed migration')))).rejects.toThrow('failed migration');
    expect(await holders()).toEqual([]);
  });

  it("gives the work's outcome when the holder's connection is lost during it, not the failed rollback's", async () => {
    const holderPids = async (): Promise<number[]> =>
      (await other.query<{ pid: number }>("SELECT l.pid FROM pg_locks l WHERE l.granted AND l.locktype = 'advisory' AND l.objid = (hashtext($1)::bigint & 4294967295)", [key])).rows.map(
        (r) => r.pid,
      );
    const ended = async (): Promise<void> => {
      const [pid] = await holderPids();
      await other.query('SELECT pg_terminate_backend($1)', [pid]);
    };
    await expect(oneProcessAtATime(db, 'migrations', 'the migrations', async () => (await ended(), 'migrated'))).resolves.toBe('migrated');
    await expect(
      oneProcessAtATime(db, 'migrations', 'the migrations', async () => {
        await ended();
        throw new Error('failed migration');
      }),
    ).rejects.toThrow('failed migration');
    // A terminated backend leaves pg_locks when its process has exited, a moment after the signal.
    expect(await eventually(holders, (rows) => rows.length === 0, 10_000, 50)).toEqual([]);
    // The lost connection was not handed back to the pool: the next holder and queries work on.
    await expect(oneProcessAtATime(db, 'migrations', 'the migrations', () => db.query('SELECT 1 AS one'))).resolves.toEqual([{ one: 1 }]);
  });

  it('fails, and hands no lost connection back to the pool, when the holder is lost while it waits for another process', async () => {
    // Another process holds the lock.
    const first = new pg.Client({ connectionString: config.DATABASE_URL });
    await first.connect();
    try {
      await first.query('BEGIN');
      await first.query('SELECT pg_advisory_xact_lock(hashtext($1))', [key]);
      let worked = false;
      // Its outcome taken at once: the wait may fail while the test still awaits the server's answer below.
      const waiting = oneProcessAtATime(db, 'migrations', 'the migrations', () => Promise.resolve((worked = true))).then(
        () => 'taken',
        (error: unknown) => (error instanceof Error ? 'failed' : 'failed with no error'),
      );
      // The waiter's connection, trying the lock again and again, is ended by the server: the
      // pool's one connection handed out (the others are idle in it).
      // pg-pool keeps its idle clients wrapped ({ client, … }); a client still connecting has no processID yet.
      const pool = (db.driver as unknown as { master: { _clients: { processID: number | null }[]; _idle: { client: unknown }[] } }).master;
      const waiter = (): number | null | undefined => pool._clients.find((c) => !pool._idle.some((idle) => idle.client === c))?.processID;
      const pid = await eventually(() => Promise.resolve(waiter()), (id) => typeof id === 'number', 60_000, 20);
      expect(pid).toEqual(expect.any(Number));
      await other.query('SELECT pg_terminate_backend($1)', [pid]);
      expect(await waiting).toBe('failed');
      expect(worked).toBe(false);
    } finally {
      await first.query('ROLLBACK').catch(() => undefined);
      await first.end();
    }
    // Every connection the pool hands out next is a live one.
    for (let i = 0; i < 12; i++) expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    await expect(oneProcessAtATime(db, 'migrations', 'the migrations', () => db.query('SELECT 2 AS two'))).resolves.toEqual([{ two: 2 }]);
  });
});
