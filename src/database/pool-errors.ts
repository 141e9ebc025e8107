import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';

/** What the service needs of node-postgres' pool and its clients. */
interface Emitter {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}
type Pool = Emitter & { _clients?: Emitter[] };

/**
 * node-postgres' own marks on a client (not part of its typings; postgres-outage tests check
 * they keep working): the query it waits on the answer of, and whether it may be sent more.
 * The pool takes back a client it finds not queryable at its release, and ends it by
 * destroying its socket.
 */
interface ClientMarks {
  _getActiveQuery?: () => unknown;
  _queryable?: boolean;
}

const logger = new Logger('Database');

/**
 * Gives every PostgreSQL connection of the pool an error listener of its own for its whole
 * life. node-postgres emits 'error' on a client whose connection the server ends (a restart,
 * pg_terminate_backend); the pool listens only while the client is idle, and TypeORM only
 * once its query runner holds it, so a connection ended in between, just checked out, had
 * none, and the unhandled 'error' event ended the process. Its query fails all the same, and
 * the request with it (a 503).
 */
export function guardPoolClients(db: DataSource): void {
  if (db.options.type !== 'postgres') return;
  const pool = (db.driver as unknown as { master?: Pool }).master;
  if (!pool) return;
  const guard = (client: unknown): void => {
    (client as Emitter).on('error', (error: unknown) =>
      logger.warn(`A database connection failed: ${error instanceof Error ? error.message : String(error)}`),
    );
  };
  pool.on('connect', guard);
  for (const client of pool._clients ?? []) guard(client);
  pool.on('release', (error: unknown, client: unknown) => {
    if (!error) dropIfStillWaiting(client as ClientMarks);
  });
}

/**
 * A client given back while it still waits on an answer is taken out of the pool: its query's
 * `query_timeout` (DATABASE_QUERY_TIMEOUT_MS) failed the request, but node-postgres leaves the
 * query in flight and queues every later one behind it. Where the answer comes late (a server
 * that was slow) it would then be used again; where it never comes (a connection whose bytes
 * were lost on the way, the socket still open: a proxy or pooler that hung) every later query
 * on it waited out its timeout, and a replica kept failing one request in a few, and its
 * webhook deliveries, until it was restarted.
 */
function dropIfStillWaiting(client: ClientMarks): void {
  if (client._queryable === false || !client._getActiveQuery?.()) return;
  client._queryable = false;
  logger.warn('A database connection was given back still waiting on an answer that did not come in time: it is closed');
}
