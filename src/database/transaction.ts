import { type DataSource, type EntityManager, QueryFailedError, type QueryRunner } from 'typeorm';

const queues = new WeakMap<DataSource, Promise<unknown>>();
/** Transactions that move a client's data version; and per data source, how many of them have committed. */
const movingVersions = new WeakSet<EntityManager>();
const versionCommits = new WeakMap<DataSource, number>();

/** Marks `tx` as moving a client's data version: its commit is counted (see dataVersionCommits). */
export function movesDataVersion(tx: EntityManager): void {
  movingVersions.add(tx);
}

/**
 * How many transactions of this process that moved a data version have committed: a reader
 * that keeps versions forgets them when this moves, so that what this process wrote is seen
 * by its next request at once.
 */
export function dataVersionCommits(db: DataSource): number {
  return versionCommits.get(db) ?? 0;
}

/** Counts the commit of a transaction marked as moving a data version, and forgets the mark (SQLite's manager is the same every time). */
function counted(db: DataSource, tx: EntityManager | undefined, committed: boolean): void {
  if (!tx || !movingVersions.delete(tx)) return;
  if (committed) versionCommits.set(db, dataVersionCommits(db) + 1);
}

function runPostgres<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  let used: EntityManager | undefined;
  return db
    .transaction((tx) => {
      used = tx;
      return work(tx);
    })
    .then(
      (result) => {
        counted(db, used, true);
        return result;
      },
      (error: unknown) => {
        counted(db, used, false);
        throw error;
      },
    );
}

/** better-sqlite3's connection: whether SQLite itself holds a transaction open, and its statements. */
type SqliteConnection = { inTransaction: boolean; exec(sql: string): unknown; pragma(sql: string, options?: { simple: boolean }): unknown };

/** The longest pause between two tries for another process's write lock (SQLite's own busy handler sleeps up to 100 ms too). */
const LOCK_RETRY_MAX_MS = 100;

/**
 * `BEGIN IMMEDIATE`, waiting for another process's write lock until `askedAt` (on the monotonic
 * clock, which a step of the system clock does not move) plus the connection's busy timeout
 * (DATABASE_QUERY_TIMEOUT_MS; a command's longer wait) between tries,
 * not inside SQLite: better-sqlite3 is synchronous, so SQLite's busy handler held the event loop
 * for the whole wait, and while an import in another process wrote, every request of the service
 * (reads and health probes included) stood still behind the webhook poller's or an upload's
 * transaction. Each try is made with no busy wait of SQLite's own; the connection's busy timeout
 * is left as it was for the statements outside transactions. The last try's SQLITE_BUSY is
 * thrown when the wait is over.
 *
 * The wait counts from `askedAt`, when the transaction was asked for, not from its turn in the
 * process's queue: transactions queued behind one that waits for the lock wait for the same
 * lock, and each counted its whole busy timeout from its own turn, so while a branches import
 * held the lock for 35 s, uploads queued behind each other were answered after 10, 19.5 and
 * 29 s (503s) or 31 s (200s), well past DATABASE_QUERY_TIMEOUT_MS. One past its time still
 * tries once, and begins when the lock is free (a queue of this process's own writers is no
 * reason to fail).
 */
async function beginImmediate(connection: SqliteConnection, askedAt: number): Promise<void> {
  const waitMs = Number(connection.pragma('busy_timeout', { simple: true }));
  const deadline = askedAt + waitMs;
  for (let pause = 2; ; pause = Math.min(pause * 2, LOCK_RETRY_MAX_MS)) {
    connection.pragma('busy_timeout = 0');
    try {
      connection.exec('BEGIN IMMEDIATE');
      return;
    } catch (error) {
      const code = (error as { code?: unknown }).code;
      // Thrown as TypeORM's statements throw (the driver's error as driverError), as before the wait.
      if (typeof code !== 'string' || !code.startsWith('SQLITE_BUSY') || performance.now() >= deadline) throw new QueryFailedError('BEGIN IMMEDIATE', [], error as Error);
    } finally {
      connection.pragma(`busy_timeout = ${waitMs}`);
    }
    await new Promise((resolve) => setTimeout(resolve, Math.max(1, Math.min(pause, deadline - performance.now()))));
  }
}
/** The fields of TypeORM's query runner that say it is in a transaction. */
type RunnerState = QueryRunner & { isTransactionActive: boolean; transactionDepth: number };

/**
 * A transaction on SQLite's one connection, begun IMMEDIATE: it takes the write lock at once,
 * waiting for another process's writer (the CLI) up to the busy timeout (see beginImmediate), instead of reading
 * first and failing at its first write, when SQLite cannot wait (SQLITE_BUSY). Whatever
 * happens, SQLite and TypeORM's runner are left outside any transaction: a COMMIT that fails
 * (a full disk) is rolled back, never left open for the next transaction to nest into as a
 * savepoint, where its writes would be acknowledged and never reach the disk.
 */
async function runSqlite<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>, askedAt: number): Promise<T> {
  const runner = db.createQueryRunner() as RunnerState;
  const connection = (db.driver as unknown as { databaseConnection: SqliteConnection }).databaseConnection;
  if (connection.inTransaction) await runner.query('ROLLBACK');
  await beginImmediate(connection, askedAt);
  // TypeORM's saves see the transaction and do not begin one of their own.
  runner.isTransactionActive = true;
  runner.transactionDepth = 1;
  const tx = runner.manager;
  try {
    const result = await work(tx);
    await runner.query('COMMIT');
    counted(db, tx, true);
    return result;
  } catch (error) {
    counted(db, tx, false);
    if (connection.inTransaction) await runner.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    runner.isTransactionActive = false;
    runner.transactionDepth = 0;
  }
}

/**
 * Runs `work` in a transaction. On SQLite every query of the process shares one
 * connection, where a second transaction started before the first ends would nest into it
 * as a savepoint; transactions are therefore run one after another (see runSqlite).
 * PostgreSQL takes each from the pool and runs them side by side. On SQLite the wait for
 * another process's write lock counts from here, the time in the queue included.
 */
export function inTransaction<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  if (db.options.type === 'postgres') return runPostgres(db, work);
  const askedAt = performance.now();
  const previous = queues.get(db) ?? Promise.resolve();
  const next = previous.then(
    () => runSqlite(db, work, askedAt),
    () => runSqlite(db, work, askedAt),
  );
  queues.set(
    db,
    next.catch(() => undefined),
  );
  return next;
}
