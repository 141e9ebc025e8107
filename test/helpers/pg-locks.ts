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

/** Until the backend `pid` waits for a lock another holds (or 30 s); whether it does. */
export async function waitingForLock(db: DataSource, pid: number): Promise<boolean> {
  const rows = await eventually(
    () => db.query<{ n: number }[]>('SELECT cardinality(pg_blocking_pids($1)) AS n', [pid]),
    (found) => Number(found[0].n) > 0,
    30_000,
    20,
  );
  return Number(rows[0].n) > 0;
}
