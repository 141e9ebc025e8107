import { Logger } from '@nestjs/common';
import type { DataSource } from 'typeorm';

/** What the service needs of node-postgres' pool and its clients. */
interface Emitter {
  on(event: string, listener: (...args: unknown[]) => void): unknown;
}
type Pool = Emitter & { _clients?: Emitter[] };

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
}
