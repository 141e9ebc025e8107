// An isolated database per run (a temporary DATA_DIR for SQLite, a fresh schema on
// PostgreSQL), the data set loaded straight into its tables (the service's import path is not
// what is measured), and the service's CLI on it.

import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { DataSource, type QueryRunner } from 'typeorm';
import { DOCUMENT_COLUMNS, visitDocument, VISIT_COLUMNS, type Branch, type VisitRow } from './data-set.js';
import { defer } from './processes.js';
import { BRAND, CLIENT, MB, message, ROOT } from './settings.js';

const CLI = join(ROOT, 'dist', 'cli.js');
/** Rows per INSERT ... SELECT FROM unnest(arrays): a parameter per column whatever the batch size. */
const PG_BATCH_ROWS = 5_000;
const execFileAsync = promisify(execFile);

export interface Place {
  /** The whole environment of the service and its CLI on this database. */
  env: Record<string, string>;
  label: string;
  /** PostgreSQL only. */
  schema?: string;
}

/** The environment of the service and its CLI, without any DATABASE_* or VISITS_CACHE_MB the caller has set. */
function serviceEnv(dataDir: string): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(process.env)) if (value !== undefined) env[name] = value;
  delete env.DATABASE_URL;
  delete env.DATABASE_SCHEMA;
  // The cached runs measure the default page cache; the cache-off service sets it to 0.
  delete env.VISITS_CACHE_MB;
  return { ...env, DATA_DIR: dataDir };
}

export async function sqlitePlace(scratch: string): Promise<Place> {
  const dataDir = await mkdtemp(join(scratch, 'sqlite-'));
  defer(`remove ${dataDir}`, () => rm(dataDir, { recursive: true, force: true }));
  return { env: serviceEnv(dataDir), label: `SQLite ${join(dataDir, 'results.sqlite')}` };
}

export async function postgresPlace(scratch: string, url: string): Promise<Place> {
  const schema = `bench_${Date.now()}`;
  // Never adopt (and later drop) a schema that is not ours.
  const taken = (await withPostgres(url, (c) => c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]))) as unknown[];
  if (taken.length > 0) throw new Error(`schema ${schema} exists already`);
  defer(`drop schema ${schema}`, () => withPostgres(url, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)));
  const dataDir = await mkdtemp(join(scratch, 'postgres-'));
  defer(`remove ${dataDir}`, () => rm(dataDir, { recursive: true, force: true }));
  const env = { ...serviceEnv(dataDir), DATABASE_URL: url, DATABASE_SCHEMA: schema };
  return { env, schema, label: `PostgreSQL schema ${schema}` };
}

/** Runs the service's CLI with --json and gives what it printed, parsed. */
export async function runCli<T>(env: Record<string, string>, args: string[]): Promise<T> {
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(process.execPath, [CLI, '--json', ...args], { cwd: ROOT, env, maxBuffer: 16 * MB }));
  } catch (error) {
    const stderr = (error as { stderr?: string }).stderr?.trim();
    throw new Error(`cli ${args.slice(0, 2).join(' ')} failed: ${stderr || message(error)}`, { cause: error });
  }
  return JSON.parse(stdout) as T;
}

/** better-sqlite3 binds no booleans; TypeORM stores SQLite datetimes as 'yyyy-mm-dd hh:mm:ss.sss' UTC. */
function sqliteVisit(row: VisitRow): Record<string, unknown> {
  const flag = (value: boolean | null): number | null => (value === null ? null : value ? 1 : 0);
  const stamp = (ms: number): string => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
  return {
    ...row,
    opt_in_contact_by_email: flag(row.opt_in_contact_by_email),
    opt_in_join_marketing: flag(row.opt_in_join_marketing),
    completed_at: stamp(row.completed_at),
    changed_at: stamp(row.changed_at),
  };
}

export function loadSqlite(file: string, count: number, visit: (i: number) => VisitRow, branches: Branch[]): void {
  const db = new Database(file);
  try {
    db.pragma('foreign_keys = ON');
    const insert = (table: string, columns: string[]): Database.Statement =>
      db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`);
    // One transaction: one fsync instead of one per row.
    db.transaction(() => {
      insert('clients', ['id', 'name', 'change_seq']).run({ ...CLIENT, change_seq: count });
      insert('brands', ['id', 'client_id', 'name']).run({ ...BRAND, client_id: CLIENT.id });
      const branch = insert('branches', ['id', 'client_id', 'brand_id', 'name', 'branch_code']);
      for (const b of branches) branch.run({ id: b.id, client_id: CLIENT.id, brand_id: BRAND.id, name: b.name, branch_code: b.branchCode });
      const visits = insert('visits', VISIT_COLUMNS);
      const documents = insert('visit_documents', DOCUMENT_COLUMNS);
      for (let i = 0; i < count; i++) {
        const row = visit(i);
        visits.run(sqliteVisit(row));
        documents.run(visitDocument(row));
      }
    })();
  } finally {
    db.close();
  }
}

/** One multi-row INSERT: far fewer round trips than a row at a time. */
async function insertRows(client: QueryRunner, table: string, columns: string[], rows: unknown[][]): Promise<void> {
  const values: unknown[] = [];
  const tuples = rows.map((row) => `(${row.map((value) => `$${values.push(value)}`).join(', ')})`);
  await client.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, values);
}

/** Column name to its SQL type (such as 'character varying(40)') of a table on the search_path. */
async function columnTypes(client: QueryRunner, table: string): Promise<Map<string, string>> {
  const rows = (await client.query(
    'SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute ' +
      'WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped',
    [table],
  )) as { attname: string; type: string }[];
  return new Map(rows.map((row) => [row.attname, row.type]));
}

/** One connection (TypeORM's query runner over node-postgres, as the service uses). */
async function withPostgres<T>(url: string, run: (client: QueryRunner) => Promise<T>): Promise<T> {
  const db = new DataSource({ type: 'postgres', url, poolSize: 1, applicationName: 'visits-bench' });
  await db.initialize();
  const client = db.createQueryRunner();
  try {
    return await run(client);
  } finally {
    await client.release();
    await db.destroy();
  }
}

/**
 * Loads in one transaction (the tables are unqualified: search_path picks the bench schema),
 * then VACUUM (ANALYZE); gives the milliseconds the latter took.
 */
export async function loadPostgres(url: string, schema: string, count: number, visit: (i: number) => VisitRow, branches: Branch[]): Promise<number> {
  return withPostgres(url, async (client) => {
    await client.query(`SET search_path TO "${schema}"`);
    await client.query('BEGIN');
    try {
      await insertRows(client, 'clients', ['id', 'name', 'change_seq'], [[CLIENT.id, CLIENT.name, count]]);
      await insertRows(client, 'brands', ['id', 'client_id', 'name'], [[BRAND.id, CLIENT.id, BRAND.name]]);
      const branchRows = branches.map((b) => [b.id, CLIENT.id, BRAND.id, b.name, b.branchCode]);
      await insertRows(client, 'branches', ['id', 'client_id', 'brand_id', 'name', 'branch_code'], branchRows);
      const visitsSql = await unnestInsert(client, 'visits', VISIT_COLUMNS);
      const documentsSql = await unnestInsert(client, 'visit_documents', DOCUMENT_COLUMNS);
      for (let first = 0; first < count; first += PG_BATCH_ROWS) {
        const rows = Array.from({ length: Math.min(PG_BATCH_ROWS, count - first) }, (_, i) => visit(first + i));
        await client.query(visitsSql, columnArrays(rows.map(postgresVisit), VISIT_COLUMNS));
        await client.query(documentsSql, columnArrays(rows.map(visitDocument), DOCUMENT_COLUMNS));
      }
      await client.query('COMMIT');
    } catch (error) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw error;
    }
    // What autovacuum would do for a table this size soon after (this server may run with it
    // off): fresh statistics, so the planner chooses as in production, and a visibility map,
    // so that index-only scans (a page's ids, the rows a deep Skip passes over) stay in the index.
    const analyzeStart = performance.now();
    await client.query('VACUUM (ANALYZE) clients, brands, branches, visits, visit_documents');
    return performance.now() - analyzeStart;
  });
}

/**
 * INSERT ... SELECT FROM unnest of a column per parameter, as an array: the server unnests them
 * into rows. Each array is cast to its column's own type (read from the catalogue, so no type
 * is repeated here).
 */
async function unnestInsert(client: QueryRunner, table: string, columns: string[]): Promise<string> {
  const types = await columnTypes(client, table);
  const arrays = columns.map((column, n) => {
    if (!types.has(column)) throw new Error(`${table} has no column ${column}`);
    return `$${n + 1}::${types.get(column)}[]`;
  });
  return `INSERT INTO ${table} (${columns.join(', ')}) SELECT * FROM unnest(${arrays.join(', ')})`;
}

/** Rows as one array per column, the parameters of an unnestInsert statement. */
function columnArrays<T extends object>(rows: T[], columns: (keyof T)[]): unknown[][] {
  return columns.map((column) => rows.map((row) => row[column]));
}

/** The instants as ISO strings, which PostgreSQL reads as timestamptz. */
function postgresVisit(row: VisitRow): Record<keyof VisitRow, unknown> {
  return { ...row, completed_at: new Date(row.completed_at).toISOString(), changed_at: new Date(row.changed_at).toISOString() };
}
