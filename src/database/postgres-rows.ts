import pg from 'pg';
import type { DataSource } from 'typeorm';

/** What HandedOnQuery changes of node-postgres' Query: not part of its typings. */
interface QueryInternals {
  handleRowDescription(message: unknown): void;
  _accumulateRows: boolean;
}

/**
 * A query whose rows are handed on as they arrive, none of them kept: node-postgres keeps
 * every row of a query whose caller waits for its end with a callback (which the client's
 * `query_timeout` always installs), so a page of a thousand visit documents would hold 4 MB
 * of texts until its last row, long enough for them to outlive V8's young generation. The
 * rows are handed to the 'row' listeners only. (`_accumulateRows` is node-postgres' own
 * switch for this, set when the row description arrives; postgres-rows.e2e-spec checks it
 * keeps working.)
 */
export class HandedOnQuery extends pg.Query {
  constructor(sql: string, params: unknown[], callback: (error: Error | undefined) => void) {
    super(sql, params, callback);
    const internals = this as unknown as QueryInternals;
    const describe = internals.handleRowDescription.bind(this);
    internals.handleRowDescription = (message) => {
      describe(message);
      internals._accumulateRows = false;
    };
  }
}

/**
 * Steps through the rows of a select on PostgreSQL, handing each to the caller as it arrives,
 * where TypeORM's `query` gives them all at once when the last has arrived. Each row's texts
 * then die young in V8's new space, as with SqliteRows. The statement's own ORDER BY gives the
 * order. It runs on a connection of the data source's pool, with its timeouts.
 */
export class PostgresRows {
  constructor(private readonly db: DataSource) {
    if (db.options.type !== 'postgres') throw new Error(`rows are handed on as they arrive on PostgreSQL only, not ${db.options.type}`);
  }

  /**
   * Calls `each` with every row of `sql`, in the order the statement gives them. An exception
   * of `each` ends the calls; the rest of the rows is read and dropped (the statement is not
   * cancelled), then it is thrown.
   */
  async each<T>(sql: string, params: readonly unknown[], each: (row: T) => void): Promise<void> {
    const runner = this.db.createQueryRunner();
    try {
      const client = (await runner.connect()) as pg.PoolClient;
      await new Promise<void>((resolve, reject) => {
        let failed: { error: unknown } | null = null;
        const query = new HandedOnQuery(sql, params as unknown[], (error) => {
          if (error) reject(error);
          else if (failed) reject(failed.error instanceof Error ? failed.error : new Error(String(failed.error)));
          else resolve();
        });
        query.on('row', (row: T) => {
          if (failed) return;
          try {
            each(row);
          } catch (error) {
            failed = { error };
          }
        });
        void client.query(query);
      });
    } finally {
      await runner.release();
    }
  }
}
