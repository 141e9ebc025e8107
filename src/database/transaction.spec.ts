import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DataSource, QueryFailedError } from 'typeorm';
import { stallDuring } from '../../test/helpers/event-loop.js';
import { lockedFor } from '../../test/helpers/sqlite-lock.js';
import { inTransaction } from './transaction.js';

describe('inTransaction on SQLite', () => {
  let db: DataSource;
  let file: string;
  const connection = () => (db.driver as unknown as { databaseConnection: { inTransaction: boolean } }).databaseConnection;

  beforeAll(async () => {
    file = join(mkdtempSync(join(tmpdir(), 'tx-')), 'tx.sqlite');
    db = await new DataSource({ type: 'better-sqlite3', database: file, prepareDatabase: (d: Database.Database) => {
        d.pragma('foreign_keys = ON');
      } }).initialize();
    await db.query('CREATE TABLE parents (id INTEGER PRIMARY KEY)');
    // A deferred foreign key is checked at COMMIT: a COMMIT that fails, as one on a full disk does, and leaves SQLite's transaction open.
    await db.query('CREATE TABLE children (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)');
    await db.query('INSERT INTO parents (id) VALUES (1)');
  });
  afterAll(() => db.destroy());

  /** The rows another connection sees: what is on disk. */
  function onDisk(): number[] {
    const other = new Database(file, { readonly: true });
    try {
      return (other.prepare('SELECT id FROM children ORDER BY id').all() as { id: number }[]).map((row) => row.id);
    } finally {
      other.close();
    }
  }

  it('commits its work, and rolls it back when the work throws', async () => {
    await inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (1, 1)'));
    await expect(
      inTransaction(db, async (tx) => {
        await tx.query('INSERT INTO children (id, parent_id) VALUES (2, 1)');
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(onDisk()).toEqual([1]);
    expect(connection().inTransaction).toBe(false);
  });

  it('rolls back a transaction whose COMMIT failed, so the next one commits on its own and reaches the disk', async () => {
    await expect(inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (3, 99)'))).rejects.toThrow(/FOREIGN KEY/);
    expect(connection().inTransaction).toBe(false);
    const runner = db.createQueryRunner();
    expect([runner.isTransactionActive, (runner as unknown as { transactionDepth: number }).transactionDepth]).toEqual([false, 0]);
    await inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (4, 1)'));
    // Before the fix the second ran as a savepoint inside the first, which never committed: nothing reached the disk.
    expect(onDisk()).toEqual([1, 4]);
  });

  it('is left outside any transaction when SQLite ended it itself (as on a full disk) and its ROLLBACK fails', async () => {
    await expect(
      inTransaction(db, async (tx) => {
        await tx.query('INSERT INTO children (id, parent_id) VALUES (6, 1)');
        // SQLITE_FULL rolls the transaction back in SQLite: TypeORM's own ROLLBACK then fails.
        await tx.query('ROLLBACK');
        throw new Error('database or disk is full');
      }),
    ).rejects.toThrow('database or disk is full');
    const runner = db.createQueryRunner();
    // Before the fix TypeORM's runner stayed "in a transaction", and every later one ran as a savepoint inside it.
    expect([runner.isTransactionActive, (runner as unknown as { transactionDepth: number }).transactionDepth]).toEqual([false, 0]);
    await inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (7, 1)'));
    await expect(inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (8, 99)'))).rejects.toThrow(/FOREIGN KEY/);
    expect(onDisk()).toEqual([1, 4, 7]);
  });

  it('lets TypeORM run its statements inside the transaction without a transaction of their own', async () => {
    await inTransaction(db, async (tx) => {
      await tx.createQueryBuilder().insert().into('children').values({ id: 5, parent_id: 1 }).execute();
      expect(connection().inTransaction).toBe(true);
    });
    expect(onDisk()).toEqual([1, 4, 5, 7]);
  });
});

/** The connection's busy timeout (DATABASE_QUERY_TIMEOUT_MS): how long a transaction waits for another process's write lock. */
const BUSY_TIMEOUT_MS = 3000;

describe('inTransaction on SQLite while another process holds the write lock', () => {
  let db: DataSource;
  let file: string;
  /** The other writer: an import in another process, as far as SQLite can tell. */
  let other: Database.Database;
  const connection = () => (db.driver as unknown as { databaseConnection: { inTransaction: boolean } }).databaseConnection;

  beforeAll(async () => {
    file = join(mkdtempSync(join(tmpdir(), 'tx-lock-')), 'tx.sqlite');
    // The service's settings: WAL, and a write's wait for another process's bounded by the busy timeout.
    db = await new DataSource({ type: 'better-sqlite3', database: file, enableWAL: true, timeout: BUSY_TIMEOUT_MS }).initialize();
    await db.query('CREATE TABLE rows (id INTEGER PRIMARY KEY)');
    other = new Database(file);
  });
  afterAll(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await db.destroy();
  });

  it('waits for the lock with the event loop free, and begins once the other writer commits', async () => {
    // The other writer commits after 400 ms. Before the fix SQLite's busy handler held the event
    // loop for the whole busy timeout: no request was answered (health probes included), this
    // timer could not even run, and the transaction failed with SQLITE_BUSY after 3 s.
    const committed = lockedFor(other, 400);
    other.exec('INSERT INTO rows (id) VALUES (1)');
    const { stall, ms, result } = await stallDuring(() => inTransaction(db, (tx) => tx.query('INSERT INTO rows (id) VALUES (2)')));
    await committed;
    expect(result.status).toBe('fulfilled');
    expect(ms).toBeGreaterThanOrEqual(350);
    expect(stall).toBeLessThan(BUSY_TIMEOUT_MS / 2);
    expect((other.prepare('SELECT id FROM rows ORDER BY id').all() as { id: number }[]).map((r) => r.id)).toEqual([1, 2]);
  });

  it('gives up with SQLITE_BUSY after the busy timeout, the event loop free meanwhile, and is left outside any transaction', async () => {
    other.exec('BEGIN IMMEDIATE');
    const { stall, ms, result } = await stallDuring(() => inTransaction(db, (tx) => tx.query('INSERT INTO rows (id) VALUES (3)')));
    other.exec('ROLLBACK');
    expect(result.status).toBe('rejected');
    // As TypeORM's statements fail: a QueryFailedError naming the statement, the driver's error in it.
    const reason = (result as PromiseRejectedResult).reason as QueryFailedError & { code?: string; driverError: { code: string } };
    expect(reason).toBeInstanceOf(QueryFailedError);
    expect({ code: reason.code, query: reason.query, driver: reason.driverError.code, message: reason.message }).toEqual({
      code: 'SQLITE_BUSY',
      query: 'BEGIN IMMEDIATE',
      driver: 'SQLITE_BUSY',
      message: expect.stringMatching(/database is locked/),
    });
    expect(ms).toBeGreaterThanOrEqual(BUSY_TIMEOUT_MS - 100);
    expect(stall).toBeLessThan(BUSY_TIMEOUT_MS / 2);
    expect(connection().inTransaction).toBe(false);
    // The busy timeout is left as it was for the statements outside transactions.
    expect((db.driver as unknown as { databaseConnection: Database.Database }).databaseConnection.pragma('busy_timeout', { simple: true })).toBe(BUSY_TIMEOUT_MS);
    await inTransaction(db, (tx) => tx.query('INSERT INTO rows (id) VALUES (4)'));
    expect((other.prepare('SELECT id FROM rows ORDER BY id').all() as { id: number }[]).map((r) => r.id)).toEqual([1, 2, 4]);
  });
  it('counts the wait of a transaction queued behind another from when it was asked for, not from its turn', async () => {
    other.exec('BEGIN IMMEDIATE');
    // Two writers of this process at once, as two uploads while an import's batch holds the lock.
    const asked = Date.now();
    const first = inTransaction(db, (tx) => tx.query('INSERT INTO rows (id) VALUES (5)'));
    const second = inTransaction(db, (tx) => tx.query('INSERT INTO rows (id) VALUES (6)'));
    const ended = (p: Promise<unknown>) => p.then(
      () => ({ status: 'fulfilled', ms: Date.now() - asked }),
      (error: { code?: string }) => ({ status: error.code, ms: Date.now() - asked }),
    );
    const [a, b] = await Promise.all([ended(first), ended(second)]);
    other.exec('ROLLBACK');
    expect([a.status, b.status]).toEqual(['SQLITE_BUSY', 'SQLITE_BUSY']);
    // Before the fix the second waited its own busy timeout once the first had given up: its
    // 503 came after twice DATABASE_QUERY_TIMEOUT_MS (and a third's after three times).
    expect(b.ms).toBeGreaterThanOrEqual(BUSY_TIMEOUT_MS - 100);
    expect(b.ms).toBeLessThan(BUSY_TIMEOUT_MS * 1.5);
    expect(connection().inTransaction).toBe(false);
  });

  it('keeps waiting for the lock when the system clock steps forward meanwhile (NTP, a VM resumed)', async () => {
    const committed = lockedFor(other, 400);
    const wallClock = Date.now;
    try {
      const waiting = inTransaction(db, (tx) => tx.query('INSERT INTO rows (id) VALUES (9)'));
      // While it waits, the system clock steps an hour ahead: the wait's deadline is on the monotonic clock.
      await new Promise((resolve) => setTimeout(resolve, 50));
      Date.now = () => wallClock() + 3_600_000;
      await expect(waiting).resolves.toBeDefined();
    } finally {
      Date.now = wallClock;
    }
    await committed;
    expect((other.prepare('SELECT id FROM rows WHERE id = 9').all() as { id: number }[]).map((r) => r.id)).toEqual([9]);
  });

  it('begins a transaction whose turn came after its time when no other process holds the lock', async () => {
    // A transaction of this process outlasting the busy timeout (no other writer): the one behind
    // it is not refused for the queue, which is no lock of another process.
    const slow = inTransaction(db, async (tx) => {
      await tx.query('INSERT INTO rows (id) VALUES (7)');
      await new Promise((resolve) => setTimeout(resolve, BUSY_TIMEOUT_MS + 200));
    });
    const behind = inTransaction(db, (tx) => tx.query('INSERT INTO rows (id) VALUES (8)'));
    await expect(Promise.all([slow, behind])).resolves.toBeDefined();
    expect((other.prepare('SELECT id FROM rows ORDER BY id').all() as { id: number }[]).map((r) => r.id)).toEqual([1, 2, 4, 7, 8, 9]);
  });
});
