import { accessSync, closeSync, constants, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { DataSourceOptions } from 'typeorm';
import { ConfigError, usableFolder, type AppConfig } from '../config/app-config.js';
import { ENTITIES } from './entities.js';
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from './migrations/index.js';
import { checkedOnConnect, postgresConnection, StatementTimeoutInTransactions } from './postgres-session.js';

export const SQLITE_FILE = 'results.sqlite';

/**
 * The embedded database's folder, made if it does not exist: a ConfigError naming DATA_DIR
 * when it cannot be made or written. Called at start before anything opens the database (a
 * DATA_DIR that is a file failed inside TypeORM's start, with a stack that named no setting).
 * Null with PostgreSQL, where nothing is kept in DATA_DIR.
 */
export function prepareDataDir(config: AppConfig): string | null {
  if (config.DATABASE_URL) return null;
  const dir = usableFolder('DATA_DIR', config.DATA_DIR);
  openable(join(dir, SQLITE_FILE));
  return dir;
}

const requireHere = createRequire(import.meta.url);

/**
 * better-sqlite3's addon, by its own path, so that no module loader has to guess it through
 * `bindings`. Asked for only on SQLite: an install for PostgreSQL may have no addon built.
 */
function nativeBinding(): string {
  return requireHere.resolve('better-sqlite3/build/Release/better_sqlite3.node');
}

/**
 * Opens and closes the embedded database's file (made, empty, where there is none, as the
 * application's first connection would make it), so that a file that cannot be opened (a
 * folder where no file can be made, such as a kernel's) fails here, in one line, rather than
 * inside the application's start, whose logger reports it first. The file and its log must be
 * writable too: SQLite opens a file it cannot write for reading only, and the service was ready
 * with every write a 500.
 *
 * A file made here is readable by this user only (0600), as the demo credentials are: it holds
 * the token signing keys (unless JWT_SIGNING_KEYS is set), the sealed webhook secrets and every
 * partner's data, and SQLite gives its -wal and -shm files the database file's permissions. A
 * file made by umask's default (0644) let any local account read them.
 */
function openable(file: string): void {
  try {
    closeSync(openSync(file, 'wx', 0o600));
  } catch {
    // There already (kept as it is), or it cannot be made: opening it below says why, in one line.
  }
  writable(file);
  const Database = requireHere('better-sqlite3') as typeof import('better-sqlite3');
  new Database(file, { nativeBinding: nativeBinding() }).close();
  writable(file);
}

/** Throws a ConfigError naming DATA_DIR when the database file or its log exists and this process may not read and write it. */
function writable(file: string): void {
  for (const path of [file, `${file}-wal`, `${file}-shm`]) {
    try {
      accessSync(path, constants.R_OK | constants.W_OK);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') continue;
      throw new ConfigError([`DATA_DIR: cannot write ${path}: ${(error as Error).message}`], { cause: error });
    }
  }
}

/**
 * The TypeORM options for the configured database. `synchronize` is never set here:
 * the schema comes from the migrations only.
 */
export function dataSourceOptions(config: AppConfig): DataSourceOptions {
  if (config.DATABASE_URL) {
    const connection = postgresConnection(config);
    return {
      type: 'postgres',
      url: connection.url,
      schema: config.DATABASE_SCHEMA,
      entities: ENTITIES,
      migrations: POSTGRES_MIGRATIONS,
      migrationsTableName: 'migrations',
      // Sessions whose statement_timeout a pooler left at the role's get theirs per transaction.
      subscribers: [StatementTimeoutInTransactions],
      poolSize: config.DATABASE_POOL_SIZE,
      applicationName: 'results-service',
      // A request never waits on the database for longer than these (then it is a 503).
      connectTimeoutMS: Math.min(5000, config.DATABASE_QUERY_TIMEOUT_MS),
      extra: {
        query_timeout: config.DATABASE_QUERY_TIMEOUT_MS,
        // Unqualified names in migrations resolve to the configured schema; the session settings
        // node-postgres reads values under (see postgresConnection).
        options: connection.options,
        // A statement that runs longer than this is cancelled instead of holding a request.
        statement_timeout: config.DATABASE_QUERY_TIMEOUT_MS,
        idle_in_transaction_session_timeout: 30000,
        // Each new connection's settings read before it is used (see checkedOnConnect).
        onConnect: checkedOnConnect(config.DATABASE_SCHEMA, config.DATABASE_QUERY_TIMEOUT_MS),
      },
    };
  }
  const dir = usableFolder('DATA_DIR', config.DATA_DIR);
  return {
    type: 'better-sqlite3',
    database: join(dir, SQLITE_FILE),
    entities: ENTITIES,
    migrations: SQLITE_MIGRATIONS,
    migrationsTableName: 'migrations',
    nativeBinding: nativeBinding(),
    enableWAL: true,
    // How long a write waits for another process's (an import, the service) before it fails.
    timeout: config.DATABASE_QUERY_TIMEOUT_MS,
    prepareDatabase: (db: { pragma(sql: string): unknown }) => {
      // Pages of 16 KB hold a visit's document (about 4 KB) without a chain of overflow pages:
      // reading a page of 1,000 visits took a third less time than with the default 4 KB. It
      // only applies to a database not yet created (before WAL is turned on, which is next).
      db.pragma('page_size = 16384');
      // 8 MB of page cache per connection (this build's default is 16 MB): reading pages of 100
      // and 1,000 documents measured the same (the documents of a window are far larger than
      // either), and a replica keeps 8 MB less once it has read that much.
      db.pragma('cache_size = -8000');
      db.pragma('foreign_keys = ON');
      // Every commit is on the disk before it is answered: with NORMAL, WAL's commits are synced
      // only at checkpoints, and a power loss or a file-system fault took uploads answered 200
      // and imports that had said how many they wrote. Imports measured the same (366 days of
      // demo visits in 6.3-6.7 s either way): they commit in batches.
      db.pragma('synchronous = FULL');
      // The write-ahead log is cut back to 16 MB by the first write after a checkpoint: a large
      // import (or one that failed on a full disk) left it at its largest, 46 to 83 MB, until the
      // process stopped. (An idle process keeps it until its next write.)
      db.pragma('journal_size_limit = 16777216');
    },
  };
}
