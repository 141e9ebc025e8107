import type { DataSource, EntityManager } from 'typeorm';

const queues = new WeakMap<DataSource, Promise<unknown>>();

/**
 * Runs `work` in a transaction. On SQLite every query of the process shares one
 * connection, where a second transaction started before the first ends would nest into it
 * as a savepoint; transactions are therefore run one after another. PostgreSQL takes each
 * from the pool and runs them side by side.
 */
export function inTransaction<T>(db: DataSource, work: (tx: EntityManager) => Promise<T>): Promise<T> {
  if (db.options.type === 'postgres') return db.transaction(work);
  const previous = queues.get(db) ?? Promise.resolve();
  const run = previous.then(
    () => db.transaction(work),
    () => db.transaction(work),
  );
  queues.set(
    db,
    run.catch(() => undefined),
  );
  return run;
}
