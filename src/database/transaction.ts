import type { DataSource, EntityManager, QueryRunner } from 'typeorm';

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

/** better-sqlite3's connection: whether SQLite itself holds a transaction open. */
type SqliteConnection = { inTransaction: boolean };
/** The fields of TypeORM's query runner that say it is in a transaction. */
type RunnerState = QueryRunner & { isTransactionActive: boolean; transactionDepth: number };

/**
 * A transaction on SQLite's one connection, begun IMMEDIATE: it takes the write lock at once,
 * waiting for another process's writer (the CLI) up to the busy timeout, instead of reading
 * first and failing at its first write, when SQLite cannot wait (SQLITE_BUSY). Whatever
 * happens, SQLite and TypeORM's runner are left outside any transaction: a COMMIT that fails
 * (a full disk) is rolled back, never left open for the next transaction to nest into as a
 * savepoint, where its writes would be acknowledged and never reach the disk.
 */
async function runSqlite<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  const runner = db.createQueryRunner() as RunnerState;
  const connection = (db.driver as unknown as { databaseConnection: SqliteConnection }).databaseConnection;
  if (connection.inTransaction) await runner.query('ROLLBACK');
  await runner.query('BEGIN IMMEDIATE');
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
 * PostgreSQL takes each from the pool and runs them side by side.
 */
export function inTransaction<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  if (db.options.type === 'postgres') return runPostgres(db, work);
  const previous = queues.get(db) ?? Promise.resolve();
  const next = previous.then(
    () => runSqlite(db, work),
    () => runSqlite(db, work),
  );
  queues.set(
    db,
    next.catch(() => undefined),
  );
  return next;
}
