import type { Database, Statement } from 'better-sqlite3';
import type { DataSource } from 'typeorm';

/**
 * Steps through the rows of a select on SQLite, handing each to the caller before the next
 * is read, where TypeORM's `query` returns them all at once. A page of a thousand visit
 * documents read at once holds 4 MB of texts until the page is whole, more than V8's new
 * space (4 MB semi-spaces, see Dockerfile), so they are copied into the old space and cost a
 * full collection; read as blobs, each is a Buffer malloc'ed in the allocator's main heap,
 * which a run of such pages leaves fragmented long after they are gone. Handed on one by one,
 * each text is copied into the page and dies young.
 *
 * The read is synchronous, as TypeORM's own (better-sqlite3 has no other kind): no other
 * query of the process runs on the shared connection while it steps through the rows.
 */
export class SqliteRows {
  /** Prepared statements by their text: callers build a bounded set of them. */
  private readonly statements = new Map<string, Statement<unknown[], Record<string, unknown>>>();

  constructor(private readonly db: DataSource) {
    if (db.options.type !== 'better-sqlite3') throw new Error(`rows are stepped through on SQLite only, not ${db.options.type}`);
  }

  /** Calls `each` with every row of `sql`, in the order the statement gives them; an exception of `each` ends the read. */
  each<T>(sql: string, params: readonly unknown[], each: (row: T) => void): void {
    for (const row of this.statement(sql).iterate(...params)) each(row as T);
  }

  /**
   * The first row of `sql`, undefined when there is none: a point read, such as a read per
   * request, without TypeORM's query runner around it (its async runner, logging and
   * broadcaster: 3 to 5 µs a read, against 1.1 to 1.4 µs prepared once).
   */
  first<T>(sql: string, params: readonly unknown[]): T | undefined {
    return this.statement(sql).get(...params) as T | undefined;
  }

  private statement(sql: string): Statement<unknown[], Record<string, unknown>> {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      // The data source's one connection, opened when it was initialized.
      const connection = (this.db.driver as unknown as { databaseConnection: Database }).databaseConnection;
      statement = connection.prepare<unknown[], Record<string, unknown>>(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }
}
