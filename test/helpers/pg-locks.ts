import type { DataSource, QueryRunner } from 'typeorm';
import { eventually } from './eventually.js';

/**
 * Watching PostgreSQL's lock queue from a test, so that a race is made certain: one party
 * holds a lock, the party under test is seen waiting behind it, then the holder lets go.
 */

/** The backend of a query runner; asked before its connection is busy with a query that waits. */
export async function backendPid(runner: QueryRunner): Promise<number> {
  return (await runner.query('SELECT pg_backend_pid() AS pid'))[0].pid as number;
}

/**
 * Until `n` backends wait, directly or behind another waiter, for a lock the backend `pid`
 * holds (or 30 s); gives the last count, for the test to assert on.
 */
export async function queuedBehind(db: DataSource, pid: number, n = 1): Promise<number> {
  const rows = await eventually(
    () =>
      db.query<{ n: string }[]>(
        `WITH RECURSIVE queued(pid) AS (
           SELECT pid FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))
           UNION SELECT a.pid FROM pg_stat_activity a JOIN queued q ON q.pid = ANY(pg_blocking_pids(a.pid)))
         SELECT COUNT(*) AS n FROM queued`,
        [pid],
      ),
    (found) => Number(found[0].n) >= n,
    30_000,
    20,
  );
  return Number(rows[0].n);
}

/** Runs `work` on a connection of its own, rolled back if it is still in a transaction and given back after. */
export async function withConnection<T>(db: DataSource, work: (runner: QueryRunner) => Promise<T>): Promise<T> {
  const runner = db.createQueryRunner();
  await runner.connect();
  try {
    return await work(runner);
  } finally {
    if (runner.isTransactionActive) await runner.rollbackTransaction();
    await runner.release();
  }
}

/**
 * Takes a lock (`lockSql`, run in a transaction of its own), starts `parties`, waits until
 * every one of them is queued behind it, then commits: how many were seen queued, and how
 * each party ended.
 */
export function behindALock<T>(
  db: DataSource,
  lockSql: string,
  params: unknown[],
  parties: () => Promise<T>[],
): Promise<{ queued: number; outcomes: PromiseSettledResult<T>[] }> {
  return withConnection(db, async (holder) => {
    const pid = await backendPid(holder);
    await holder.startTransaction();
    await holder.query(lockSql, params);
    const started = parties();
    for (const party of started) party.catch(() => undefined);
    const queued = await queuedBehind(db, pid, started.length);
    await holder.commitTransaction();
    return { queued, outcomes: await Promise.allSettled(started) };
  });
}
