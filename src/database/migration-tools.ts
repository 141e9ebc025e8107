import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DataSource, type Migration } from 'typeorm';
import type pg from 'pg';
import { ConfigError, type AppConfig } from '../config/app-config.js';
import { dataSourceOptions } from './data-source-options.js';
import { postgresConnection, SESSION_SETTINGS_SQL, sessionSettingsProblem, type SessionSettings } from './postgres-session.js';
import { SUPERSEDED_MIGRATIONS } from './migrations/earlier-form.js';

/** A data source for migration commands: never runs migrations by itself. */
export async function openDataSource(config: AppConfig): Promise<DataSource> {
  await ensureSchema(config);
  const db = new DataSource({ ...dataSourceOptions(config), migrationsRun: false });
  return db.initialize();
}

/**
 * Applies the pending migrations, one process at a time per database (per PostgreSQL schema):
 * replicas starting with MIGRATIONS_RUN=true and a migration Job may run them at once, and
 * each would otherwise find the same migrations pending and fail on the tables another had
 * just made. A process that waited finds them applied. Gives the migrations this process applied.
 */
export function runMigrationsExclusively(db: DataSource): Promise<Migration[]> {
  return oneProcessAtATime(db, 'migrations', 'the migrations', () => db.runMigrations({ transaction: 'each' }));
}

/**
 * Runs `work` while no other process runs work of the same `purpose` on this database (this
 * PostgreSQL schema, this SQLite file): a check-then-write that several replicas may start at
 * once (the migrations, the demo's seeding of an empty database) finds what the first wrote.
 * `purpose` names the lock (a word), `what` the work in the error of a wait that lasts too long.
 */
export async function oneProcessAtATime<T>(db: DataSource, purpose: string, what: string, work: () => Promise<T>): Promise<T> {
  if (db.options.type === 'postgres') {
    const key = `results-service:${purpose}:${db.options.schema ?? 'public'}`;
    // A lock of a transaction kept open on a connection of its own while the work runs on others.
    // Not a session lock: behind a pooler in transaction mode (PgBouncer's pool_mode =
    // transaction) the session is the client's only within a transaction, and a session lock
    // stayed on a server connection the pooler gave to others, never released, while its unlock
    // went to another (every later start waited for it, then failed). A transaction keeps its
    // connection, on a pooler too, and ends with the process that holds it.
    const holder = db.createQueryRunner('master');
    const connection = (await holder.connect()) as pg.Client;
    try {
      // Tried again and again rather than waited for in one statement, which the query timeout would end.
      await untilTaken(what, async () => {
        // Read committed whatever the database's default: an open transaction holds back no
        // snapshot then, for CREATE INDEX CONCURRENTLY (a migration's) to wait for.
        try {
          // Inside the try: a transaction begun and then failed (its SET LOCAL statement_timeout,
          // see StatementTimeoutInTransactions) is rolled back, not handed back to the pool open.
          await holder.startTransaction('READ COMMITTED');
          // The holder is idle while the work runs: the pool's idle_in_transaction_session_timeout would end it.
          await holder.query('SET LOCAL idle_in_transaction_session_timeout = 0');
          // The key written into the statement, not a parameter: a statement with parameters leaves
          // its portal, and the portal its snapshot, open until the transaction ends.
          const rows = (await holder.query(`SELECT pg_try_advisory_xact_lock(hashtext('${key.replace(/'/g, "''")}')) AS taken`)) as { taken: boolean }[];
          if (rows[0]?.taken === true) return true;
        } catch (error) {
          await holder.rollbackTransaction().catch(() => undefined);
          throw error;
        }
        await holder.rollbackTransaction();
        return false;
      });
      try {
        return await work();
      } finally {
        // A holder connection lost during the work (its lock with it) fails its rollback: that
        // must not stand in for the work's own outcome, a success or the error that says why not.
        // Nor may the connection go back to the pool before the pool has noticed it is gone
        // (the next process-at-a-time's holder was given it, and failed): it is ended first.
        await holder.rollbackTransaction().catch(() => {
          // Not waited for: marked as ending at once, which keeps the pool from reusing it.
          void connection.end().catch(() => undefined);
        });
      }
    } finally {
      await holder.release();
    }
  }
  // SQLite: an exclusive transaction on a lock file beside the database, ended with the process if it dies.
  const file = typeof db.options.database === 'string' ? db.options.database : null;
  if (!file || file === ':memory:') return work();
  const lock = new Database(`${file}.${purpose}-lock`, { timeout: 0 });
  try {
    // Tried again and again rather than waited for inside SQLite, which would hold the event loop
    // (and a process's own second data source, a test's, could never let go).
    await untilTaken(what, () => {
      try {
        lock.exec('BEGIN EXCLUSIVE');
        return Promise.resolve(true);
      } catch (error) {
        if ((error as { code?: string }).code !== 'SQLITE_BUSY') throw error;
        return Promise.resolve(false);
      }
    });
    try {
      return await work();
    } finally {
      lock.exec('COMMIT');
    }
  } finally {
    lock.close();
  }
}

/** How long a process waits for another's migrations (or demo seeding) to end before it gives up. */
const LOCK_WAIT_MS = 10 * 60_000;

/** Calls `take` every 50 ms until it takes the lock; an error past LOCK_WAIT_MS. */
async function untilTaken(what: string, take: () => Promise<boolean>): Promise<void> {
  const deadline = performance.now() + LOCK_WAIT_MS;
  while (!(await take())) {
    if (performance.now() > deadline) throw new Error(`another process has been running ${what} for over ${LOCK_WAIT_MS / 60_000} minutes`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The configured PostgreSQL schema is missing and this process may not create it. */
export class SchemaMissingError extends Error {
  constructor(schema: string) {
    super(
      `DATABASE_SCHEMA "${schema}" does not exist in the database, and with MIGRATIONS_RUN=false this process does not create it: ` +
        'run the migrations first (npm run cli -- migrations run), or start with MIGRATIONS_RUN=true',
    );
    this.name = 'SchemaMissingError';
  }
}

/** `"name"`: a PostgreSQL identifier quoted, with any double quote in it doubled. */
export const quoteIdentifier = (name: string): string => `"${name.replace(/"/g, '""')}"`;

/**
 * Makes sure the configured PostgreSQL schema exists before anything uses it (the
 * connection's search_path names it, and migrations create their tables in it). Whoever
 * applies the migrations creates it: `migrations run`, or a start with MIGRATIONS_RUN=true.
 * Otherwise a missing schema is a SchemaMissingError. Nothing to do on SQLite.
 */
export async function prepareSchema(config: AppConfig, create = config.MIGRATIONS_RUN): Promise<'found' | 'made'> {
  if (!config.DATABASE_URL) return 'found';
  const connection = postgresConnection(config);
  const db = new DataSource({
    type: 'postgres',
    url: connection.url,
    applicationName: 'results-service',
    connectTimeoutMS: Math.min(5000, config.DATABASE_QUERY_TIMEOUT_MS),
    extra: { options: connection.options },
  });
  await db.initialize();
  try {
    await refuseOtherEncodings(db);
    await refuseSessionsWithoutSettings(db, config.DATABASE_SCHEMA);
    // Looked up first: CREATE SCHEMA IF NOT EXISTS needs the CREATE privilege even when the schema exists.
    const found = await db.query<unknown[]>('SELECT 1 FROM pg_namespace WHERE nspname = $1', [config.DATABASE_SCHEMA]);
    if (found.length > 0) return 'found';
    if (!create) throw new SchemaMissingError(config.DATABASE_SCHEMA);
    try {
      await db.query(`CREATE SCHEMA IF NOT EXISTS ${quoteIdentifier(config.DATABASE_SCHEMA)}`);
    } catch (error) {
      // Another process made it at the same moment (IF NOT EXISTS does not cover a concurrent CREATE).
      const code = (error as { driverError?: { code?: string } }).driverError?.code;
      if (code !== '23505' && code !== '42P06') throw error;
    }
    return 'made';
  } finally {
    await db.destroy();
  }
}

/**
 * A database whose encoding is not UTF8 stops the start: text is kept as partners send it,
 * and a LATIN1 (or SQL_ASCII) database refused a dish name in Greek with a 500, or took the
 * bytes without checking them.
 */
async function refuseOtherEncodings(db: DataSource): Promise<void> {
  const [row] = await db.query<{ server_encoding: string }[]>('SHOW server_encoding');
  if (row?.server_encoding !== 'UTF8') {
    throw new ConfigError([
      `DATABASE_URL names a database whose encoding is ${row?.server_encoding ?? 'unknown'}; the service keeps text as UTF-8 and needs a database created with ENCODING 'UTF8'`,
    ]);
  }
}

/**
 * A start (and every CLI command) stops, naming what differs, when a session of DATABASE_URL
 * does not run with the settings it starts with (see sessionSettingsProblem): the migrations
 * made every table in `public` otherwise, behind a pooler that dropped them.
 */
export async function refuseSessionsWithoutSettings(db: DataSource, schema: string): Promise<void> {
  const [row] = await db.query<SessionSettings[]>(SESSION_SETTINGS_SQL);
  const problem = row ? sessionSettingsProblem(row, schema) : null;
  if (problem !== null) throw new ConfigError([problem]);
}

/** Creates the configured PostgreSQL schema if it does not exist yet. */
export function ensureSchema(config: AppConfig): Promise<'found' | 'made'> {
  return prepareSchema(config, true);
}

/**
 * Migrations the database ran that this release does not know: a later release ran them (its
 * replicas may still serve on the schema while they only add; README, "Upgrading and rolling
 * back"). None where there is no migrations table yet.
 */
export async function migrationsAhead(db: DataSource): Promise<string[]> {
  const runner = db.createQueryRunner();
  try {
    if (!(await runner.hasTable('migrations'))) return [];
    const known = new Set([...db.migrations.map((m) => m.name), ...SUPERSEDED_MIGRATIONS]);
    const rows = (await runner.query('SELECT "name" FROM "migrations" ORDER BY "timestamp"')) as { name: string }[];
    return rows.map((r) => r.name).filter((name) => !known.has(name));
  } finally {
    await runner.release();
  }
}

/** The SQL the entities still need after every migration: empty when the schema is current. */
export async function pendingSchemaChanges(db: DataSource): Promise<{ up: string[]; down: string[] }> {
  const log = await db.driver.createSchemaBuilder().log();
  return { up: log.upQueries.map((q) => q.query), down: log.downQueries.map((q) => q.query) };
}

const escape = (sql: string): string => sql.replace(/\\/g, '\\\\').replace(/`/g, '\\`').replace(/\$\{/g, '\\${');

/**
 * Writes a migration with the SQL that brings the database (after all existing
 * migrations) in line with the entities, and registers it in migrations/index.ts.
 */
export async function generateMigration(db: DataSource, name: string, sourceDir: string): Promise<string | null> {
  const { up, down } = await pendingSchemaChanges(db);
  if (up.length === 0) return null;
  const driver = db.options.type === 'postgres' ? 'postgres' : 'sqlite';
  const className = `${name}${Date.now()}`;
  // Migrations name no schema: they apply to the connection's search_path (DATABASE_SCHEMA).
  const schema = db.options.type === 'postgres' ? (db.options.schema ?? 'public') : undefined;
  const unqualified = (sql: string): string => (schema ? sql.split(`"${schema}".`).join('') : sql);
  const lines = (queries: string[]): string =>
    queries.map((q) => `    await queryRunner.query(\`${escape(unqualified(q))}\`);`).join('\n');
  const text = `import type { MigrationInterface, QueryRunner } from 'typeorm';

export class ${className} implements MigrationInterface {
  name = '${className}';

  async up(queryRunner: QueryRunner): Promise<void> {
${lines(up)}
  }

  async down(queryRunner: QueryRunner): Promise<void> {
${lines(down.reverse())}
  }
}
`;
  const dir = join(sourceDir, 'database', 'migrations', driver);
  await mkdir(dir, { recursive: true });
  const file = join(dir, `${className}.ts`);
  await writeFile(file, text);
  await writeIndex(join(sourceDir, 'database', 'migrations'));
  return file;
}

async function writeIndex(dir: string): Promise<void> {
  const names = async (driver: string): Promise<string[]> =>
    (await readdir(join(dir, driver)).catch(() => []))
      .filter((f) => f.endsWith('.ts'))
      .map((f) => f.slice(0, -3))
      .sort((a, b) => Number(/\d+$/.exec(a)?.[0]) - Number(/\d+$/.exec(b)?.[0]));
  const sqlite = await names('sqlite');
  const postgres = await names('postgres');
  const imports = [
    ...sqlite.map((n) => `import { ${n} as Sqlite${n} } from './sqlite/${n}.js';`),
    ...postgres.map((n) => `import { ${n} as Postgres${n} } from './postgres/${n}.js';`),
  ];
  const text = `${imports.join('\n')}

/** Migrations per database, oldest first. Generated by \`npm run migration:generate -- Name\`. */
export const SQLITE_MIGRATIONS: Function[] = [${sqlite.map((n) => `Sqlite${n}`).join(', ')}];
export const POSTGRES_MIGRATIONS: Function[] = [${postgres.map((n) => `Postgres${n}`).join(', ')}];
`;
  await writeFile(join(dir, 'index.ts'), text);
}
