import type { DataSource, EntityManager } from 'typeorm';

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

function run<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  let used: EntityManager | undefined;
  return db
    .transaction((tx) => {
      used = tx;
      return work(tx);
    })
    .then((result) => {
      if (used && movingVersions.has(used)) versionCommits.set(db, dataVersionCommits(db) + 1);
      return result;
    });
}

/**
 * Runs `work` in a transaction. On SQLite every query of the process shares one
 * connection, where a second transaction started before the first ends would nest into it
 * as a savepoint; transactions are therefore run one after another. PostgreSQL takes each
 * from the pool and runs them side by side.
 */
export function inTransaction<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  if (db.options.type === 'postgres') return run(db, work);
  const previous = queues.get(db) ?? Promise.resolve();
  const next = previous.then(
    () => run(db, work),
    () => run(db, work),
  );
  queues.set(
    db,
    next.catch(() => undefined),
  );
  return next;
}
