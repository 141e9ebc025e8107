import type { Database, Statement } from 'better-sqlite3';
import type { DataSource } from 'typeorm';

/** A function SQL statements can call, written in JavaScript (better-sqlite3's `function`). */
export type SqlFunction = (...args: unknown[]) => unknown;

/**
 * Statements run on the SQLite connection itself, prepared once, with functions of the
 * caller's that SQL can call: for the queries whose result TypeORM's `query` would copy into
 * objects of its own (a page's visits joined into one value, see VisitsRepository).
 *
 * Like TypeORM's own, every read is synchronous (better-sqlite3 has no other kind): no other
 * query of the process runs on the shared connection while it does, and a function called by
 * the statement runs within it.
 */
export class SqliteStatements {
  /** Prepared statements by their text: callers build a bounded set of them. */
  private readonly statements = new Map<string, Statement<unknown[], Record<string, unknown>>>();
  private connection: Database | null = null;

  constructor(
    private readonly db: DataSource,
    private readonly functions: Readonly<Record<string, SqlFunction>> = {},
  ) {
    if (db.options.type !== 'better-sqlite3') throw new Error(`statements are run on SQLite only, not ${db.options.type}`);
  }

  /** The first row of `sql`, or undefined when it has none. An exception of a function it calls ends it, and is thrown. */
  get<T>(sql: string, params: readonly unknown[]): T | undefined {
    return this.statement(sql).get(...params) as T | undefined;
  }

  /**
   * Calls `each` with every row of `sql`, in the order the statement gives them, handing each
   * on before the next is read (where TypeORM's `query` returns them all at once); an
   * exception of `each` ends the read.
   */
  each<T>(sql: string, params: readonly unknown[], each: (row: T) => void): void {
    for (const row of this.statement(sql).iterate(...params)) each(row as T);
  }

  private statement(sql: string): Statement<unknown[], Record<string, unknown>> {
    let statement = this.statements.get(sql);
    if (statement === undefined) {
      statement = this.open().prepare<unknown[], Record<string, unknown>>(sql);
      this.statements.set(sql, statement);
    }
    return statement;
  }

  /** The data source's one connection (opened when it was initialized), with the functions defined on it. */
  private open(): Database {
    if (this.connection === null) {
      const connection = (this.db.driver as unknown as { databaseConnection: Database }).databaseConnection;
      for (const [name, fn] of Object.entries(this.functions)) connection.function(name, { varargs: true }, fn);
      this.connection = connection;
    }
    return this.connection;
  }
}
