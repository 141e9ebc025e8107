import type { Database } from 'better-sqlite3';

/**
 * Has `other` (another connection to the database file: an import in another process, as far
 * as SQLite can tell) take the write lock now and commit after `ms`; resolves once it has.
 */
export function lockedFor(other: Database, ms: number): Promise<void> {
  other.exec('BEGIN IMMEDIATE');
  return new Promise<void>((done) =>
    setTimeout(() => {
      other.exec('COMMIT');
      done();
    }, ms),
  );
}
