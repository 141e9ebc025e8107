import type { DataSource, Logger } from 'typeorm';

/** A statement TypeORM ran, with its parameters. */
export interface RunStatement {
  sql: string;
  params: unknown[];
}

/**
 * The statements `db` runs while `run` does (read from TypeORM's logger, which every query
 * runner tells), and what `run` gave: for tests that look at the plan of what a repository sends.
 */
export async function statementsOf<T>(db: DataSource, run: () => Promise<T>): Promise<{ result: T; statements: RunStatement[] }> {
  const statements: RunStatement[] = [];
  const logger = db.logger;
  const capture: Logger = {
    logQuery: (sql, params) => void statements.push({ sql, params: (params as unknown[] | undefined) ?? [] }),
    logQueryError: () => undefined,
    logQuerySlow: () => undefined,
    logSchemaBuild: () => undefined,
    logMigration: () => undefined,
    log: () => undefined,
  };
  (db as { logger: Logger }).logger = capture;
  try {
    return { result: await run(), statements };
  } finally {
    (db as { logger: Logger }).logger = logger;
  }
}
