// Benchmark of GET /visits/standard through the full stack (HTTP, API key and token checks,
// query validation, database, JSON) against two references that serve the very same bytes:
// a bare node:http server (the ceiling; the gap is what the service costs in all) and a
// minimal NestJS app on Express (the framework floor; the gap is what the service adds on
// top of the framework). Also measured: a deep page (Skip near the end of the window) against
// the first page, and POST /connect/token (scrypt-bound, so far slower by design).
//
// Each page is measured twice: as configured by default, where a repeated page comes from the
// page cache; then on a second service with the cache off (VISITS_CACHE_MB=0) where every
// request asks for another page (Skip walks the window, or its last 50 pages for the deep
// row), so every answer is read from the database and rendered: many partners pulling
// different data at once.
//
// Run: npm run bench (builds, then runs this file). Settings, from the environment:
//   BENCH_SQLITE_VISITS    visits loaded for client 1001 on SQLite (default 200000)
//   BENCH_POSTGRES_VISITS  visits loaded for client 1001 on PostgreSQL (default 1000000)
//   BENCH_VISITS        when set, the visits on every database (overrides the two above)
//   BENCH_DURATION      seconds per measured run (default 10)
//   BENCH_CONNECTIONS   concurrent connections per run (default 50)
//   BENCH_DATABASES     comma-separated, sqlite and/or postgres (default sqlite,postgres)
//   BENCH_TOKEN_DURATION   seconds of the measured token run (default 10: at ~1 s a request under
//                          load, a shorter run may see no answer at all)
//   BENCH_POSTGRES_URL  server of the postgres runs (default postgres://postgres@127.0.0.1:5432/test)
//
// Each database gets a place of its own (a temporary DATA_DIR; a fresh schema bench_<time>)
// that is removed afterwards, also on failure or Ctrl-C. Output: a table on stdout and
// bench/results/visits-<time>.json. Exit code 1 when anything failed or a run saw non-2xx
// responses or connection errors (its figures would not mean what they seem to).

import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import os from 'node:os';
import { join, relative, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import Database from 'better-sqlite3';
import pg from 'pg';

const ROOT = resolve(import.meta.dirname, '..');
const CLI = join(ROOT, 'dist', 'cli.js');
const MAIN = join(ROOT, 'dist', 'main.js');
const DEMO_DATA = join(ROOT, 'dist', 'demo', 'demo-data.js');
const BARE_SERVER = join(ROOT, 'bench', 'bare-server.mjs');
const FRAMEWORK_FLOOR = join(ROOT, 'bench', 'framework-floor.mjs');
const RESULTS_DIR = join(ROOT, 'bench', 'results');

const CLIENT = { id: 1001, name: 'Acme Dining Group' };
const BRAND = { id: 5, name: 'Acme Grill' };
const BRANCH_COUNT = 50;
const TOWNS = ['Leeds', 'Manchester', 'York', 'Sheffield', 'Nottingham', 'Birmingham', 'Liverpool', 'Bristol', 'Newcastle', 'Hull'];
/** Days of visits, ending yesterday: any 31-day window before today is full. */
const DATA_DAYS = 60;
/** The longest range the endpoint accepts (VISITS_MAX_RANGE_DAYS), both ends included. */
const WINDOW_DAYS = 31;
/** The measured pages, in table order; the deep page's Skip is set per data set. */
const PAGES = [
  { name: 'first', label: 'Take=100 first page', take: 100, deep: false },
  { name: 'deep', label: 'Take=100 deep page', take: 100, deep: true },
  { name: 'take1000', label: 'Take=1000', take: 1000, deep: false },
];
/** Change feed pages: Take=500 after the first page of the history, and after 95% of it. */
const FEEDS = [
  { name: 'feed-start', label: 'feed Take=500 from the start', take: 500, at: 0 },
  { name: 'feed-deep', label: 'feed Take=500 deep', take: 500, at: 0.95 },
];
/** The loaded visits were written over this many days before the bench started (within the feed's 90). */
const FEED_DAYS = 60;
const BENCH_STARTED_MS = Date.now();
/** Responses slower than this are counted in each run. */
const SLOW_MS = 1000;
const FIRST_VISIT_ID = 900_000_001;
/** Seconds of load before each measured run, not counted: JIT, pools and caches warm up first. */
const WARMUP_SECONDS = 5;
/**
 * A response not complete after this many seconds counts as an error. Far above autocannon's
 * 10 s default: on a saturated machine a slow answer is a result to report (its latency is in
 * the histogram), not a failed measurement.
 */
const REQUEST_TIMEOUT_SECONDS = 30;
/** Rows per INSERT ... SELECT FROM unnest(arrays): 18 parameters whatever the batch size. */
const PG_BATCH_ROWS = 10_000;
const RSS_POLL_MS = 200;
const READY_TIMEOUT_MS = 60_000;
/** The service judges "today" in this zone (RESULTS_TIMEZONE default); ToDate must be before it. */
const SERVICE_TIMEZONE = 'Europe/London';

const MINUTE = 60_000;
const DAY = 86_400_000;
const MB = 1_000_000;

const VISIT_COLUMNS = [
  'id',
  'client_id',
  'brand_id',
  'branch_id',
  'visit_type',
  'questionnaire_type',
  'visit_score',
  'recommend_score',
  'recommend_comment',
  'visit_date',
  'visit_date_time',
  'modification_date',
  'visit_source',
  'sections',
  'guest_id',
  'opt_in_contact_by_email',
  'opt_in_join_marketing',
  'completed_at',
  'change_seq',
  'changed_at',
];

const execFileAsync = promisify(execFile);
const log = (line) => console.log(line);
const message = (error) => (error instanceof Error ? error.message : String(error));

/** The error with its causes (fetch hides the real reason, such as ECONNRESET, in `cause`). */
function describeError(error) {
  let text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  for (let cause = error?.cause; cause; cause = cause.cause) text += `\n  caused by: ${message(cause)}`;
  return text;
}

// ---------------------------------------------------------------------------------------------
// Settings and facts
// ---------------------------------------------------------------------------------------------

function readSettings(env = process.env) {
  const positive = (name, fallback) => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer: '${raw}'`);
    return Number(raw);
  };
  const databases = (env.BENCH_DATABASES?.trim() || 'sqlite,postgres')
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
  for (const name of databases) {
    if (name !== 'sqlite' && name !== 'postgres') throw new Error(`BENCH_DATABASES: unknown database '${name}'`);
  }
  const visitsOverride = positive('BENCH_VISITS', null);
  const durationSeconds = positive('BENCH_DURATION', 10);
  return {
    visits: {
      sqlite: visitsOverride ?? positive('BENCH_SQLITE_VISITS', 200_000),
      postgres: visitsOverride ?? positive('BENCH_POSTGRES_VISITS', 1_000_000),
    },
    durationSeconds,
    tokenDurationSeconds: positive('BENCH_TOKEN_DURATION', 10),
    connections: positive('BENCH_CONNECTIONS', 50),
    databases,
    postgresUrl: env.BENCH_POSTGRES_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/test',
  };
}

function machineFacts() {
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    totalMemoryGB: round(os.totalmem() / 1024 ** 3, 1),
  };
}

/** Today's date where the service judges it, and the data and request windows around it. */
function benchDates() {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: SERVICE_TIMEZONE,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(new Date());
  const get = (type) => parts.find((p) => p.type === type)?.value;
  const today = `${get('year')}-${get('month')}-${get('day')}`;
  const yesterday = addDays(today, -1);
  return {
    today,
    firstDataDay: addDays(yesterday, -(DATA_DAYS - 1)),
    lastDataDay: yesterday,
    from: addDays(yesterday, -(WINDOW_DAYS - 1)),
    to: yesterday,
  };
}

function addDays(date, days) {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY).toISOString().slice(0, 10);
}

/** Wall-clock date-times are handled as UTC milliseconds, so no local zone leaks in. */
function wallClock(ms) {
  return new Date(ms).toISOString().slice(0, 19);
}

function round(value, decimals) {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

// ---------------------------------------------------------------------------------------------
// Clean-up: every resource registers its undo as it is made; they run last first
// ---------------------------------------------------------------------------------------------

const cleanups = [];

function defer(label, action) {
  cleanups.push({ label, action });
}

/** Runs the undo actions registered after `mark`; a failing one is reported, the rest still run. */
async function cleanUpTo(mark) {
  while (cleanups.length > mark) {
    const { label, action } = cleanups.pop();
    try {
      await action();
    } catch (error) {
      console.error(`clean-up "${label}" failed: ${message(error)}`);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Data set
// ---------------------------------------------------------------------------------------------

function benchBranches() {
  return Array.from({ length: BRANCH_COUNT }, (_, i) => {
    const n = String(i + 1).padStart(2, '0');
    const town = TOWNS[i % TOWNS.length];
    return {
      id: `BR-${CLIENT.id}-${String(i + 1).padStart(4, '0')}`,
      name: `${BRAND.name} ${town} ${n}`,
      branchCode: `AG-${town.slice(0, 3).toUpperCase()}-${n}`,
    };
  });
}

/**
 * Returns `visit(i)`: the row (column name to value) of visit i of `count`, spread evenly over
 * DATA_DAYS days ending yesterday, ids rising with time. Section contents are borrowed from
 * the service's own demo generator so that subjects, tags, answers and scores look real; they
 * are only regrouped to 5-7 sections of 3-5 questions, the size of a production visit.
 */
async function visitGenerator(count, dates, branches) {
  const { createRandom, demoVisits } = await import(pathToFileURL(DEMO_DATA).href);
  const random = createRandom(20_240_601);
  const pools = demoPools(demoVisits({ today: '2024-06-01', days: 28 }));
  const firstDayMs = Date.parse(`${dates.firstDataDay}T00:00:00Z`);
  const todayMs = Date.parse(`${dates.today}T00:00:00Z`);

  return (i) => {
    // Day d holds visits ceil(d*count/DAYS) .. ceil((d+1)*count/DAYS)-1: even to within one.
    const day = Math.floor((i * DATA_DAYS) / count);
    const dayFirst = Math.ceil((day * count) / DATA_DAYS);
    const dayCount = Math.ceil(((day + 1) * count) / DATA_DAYS) - dayFirst;
    // Spread over opening hours, 11:00 to 22:59.
    const minute = 11 * 60 + Math.floor(((i - dayFirst) * 12 * 60) / dayCount);
    const startMs = firstDayMs + day * DAY + minute * MINUTE + random.int(0, 59) * 1000;
    const modifiedMs = Math.min(startMs + random.int(120, 1440) * MINUTE, todayMs - random.int(1, 45) * MINUTE);
    const completedMs = Math.min(startMs + random.int(15, 90) * MINUTE, modifiedMs);

    const roll = random.next();
    const type = roll < 0.2 ? 'MV' : roll < 0.8 ? 'OF' : 'TA';
    const pool = pools.get(type);
    const header = random.pick(pool.visits);
    const names = random.sample(pool.names, random.int(5, 7));
    const sections = names.map((name) => random.pick(pool.sections.get(name)));
    const visitScore = round(sections.reduce((sum, s) => sum + s.score, 0) / sections.length, 1);
    const hour = new Date(startMs).getUTCHours();

    return {
      id: FIRST_VISIT_ID + i,
      client_id: CLIENT.id,
      brand_id: BRAND.id,
      branch_id: random.pick(branches).id,
      visit_type: type,
      questionnaire_type: type === 'MV' ? `Mystery Visit - ${hour < 16 ? 'Lunch' : 'Dinner'}` : header.questionnaireType,
      visit_score: visitScore,
      recommend_score: header.recommendScore,
      recommend_comment: header.recommendComment,
      visit_date: wallClock(startMs).slice(0, 10),
      visit_date_time: wallClock(startMs),
      modification_date: wallClock(modifiedMs),
      visit_source: header.visitSource,
      sections: JSON.stringify(sections),
      guest_id: header.guestId,
      opt_in_contact_by_email: header.optIns?.contactByEmail ?? null,
      opt_in_join_marketing: header.optIns?.joinMarketing ?? null,
      // An instant; each loader writes it in its driver's form.
      completed_at: completedMs,
      // A history of `count` writes in generation order over the last FEED_DAYS days: the change feed's order.
      change_seq: i + 1,
      changed_at: changedAt(i, count),
    };
  };
}

/**
 * Per visit type: the demo visits (for their headers: comments, sources, guests), and for each
 * section name the demo sections with 3-5 questions. Names are in questionnaire order (their
 * average relative position in the demo visits), so a sample keeps sections in a natural order.
 */
function demoPools(demo) {
  const position = new Map();
  const pools = new Map();
  for (const visit of demo) {
    const pool = pools.get(visit.visitType) ?? { visits: [], sections: new Map(), names: [] };
    pools.set(visit.visitType, pool);
    pool.visits.push(visit);
    visit.sections.forEach((section, index) => {
      const [sum, n] = position.get(section.name) ?? [0, 0];
      position.set(section.name, [sum + index / visit.sections.length, n + 1]);
      if (section.questions.length < 3 || section.questions.length > 5) return;
      const list = pool.sections.get(section.name) ?? [];
      pool.sections.set(section.name, list);
      list.push(section);
    });
  }
  const rank = (name) => position.get(name)[0] / position.get(name)[1];
  for (const [type, pool] of pools) {
    pool.names = [...pool.sections.keys()].sort((a, b) => rank(a) - rank(b));
    if (pool.names.length < 7) throw new Error(`demo data has too few section kinds for ${type} visits`);
  }
  for (const type of ['MV', 'OF', 'TA']) if (!pools.has(type)) throw new Error(`demo data has no ${type} visits`);
  return pools;
}

// ---------------------------------------------------------------------------------------------
// Loading: straight into the tables, bypassing the service (its import path is not measured)
// ---------------------------------------------------------------------------------------------

/** better-sqlite3 binds no booleans; TypeORM stores SQLite datetimes as 'yyyy-mm-dd hh:mm:ss.sss' UTC. */
function sqliteVisit(row) {
  const flag = (value) => (value === null ? null : value ? 1 : 0);
  const stamp = (ms) => new Date(ms).toISOString().replace('T', ' ').slice(0, 23);
  return {
    ...row,
    opt_in_contact_by_email: flag(row.opt_in_contact_by_email),
    opt_in_join_marketing: flag(row.opt_in_join_marketing),
    completed_at: stamp(row.completed_at),
    changed_at: stamp(row.changed_at),
  };
}

/** When write `i` of `count` happened: evenly over the FEED_DAYS days before the bench started. */
function changedAt(i, count) {
  return BENCH_STARTED_MS - FEED_DAYS * DAY + Math.floor((i * FEED_DAYS * DAY) / count);
}

function loadSqlite(file, count, visit, branches) {
  const db = new Database(file);
  try {
    db.pragma('foreign_keys = ON');
    const insert = (table, columns) =>
      db.prepare(`INSERT INTO ${table} (${columns.join(', ')}) VALUES (${columns.map((c) => `@${c}`).join(', ')})`);
    // One transaction: one fsync instead of one per row.
    db.transaction(() => {
      insert('clients', ['id', 'name', 'change_seq']).run({ ...CLIENT, change_seq: count });
      insert('brands', ['id', 'client_id', 'name']).run({ ...BRAND, client_id: CLIENT.id });
      const branch = insert('branches', ['id', 'client_id', 'brand_id', 'name', 'branch_code']);
      for (const b of branches) branch.run({ id: b.id, client_id: CLIENT.id, brand_id: BRAND.id, name: b.name, branch_code: b.branchCode });
      const statement = insert('visits', VISIT_COLUMNS);
      for (let i = 0; i < count; i++) statement.run(sqliteVisit(visit(i)));
    })();
  } finally {
    db.close();
  }
}

/** One multi-row INSERT: far fewer round trips than a row at a time. */
function insertRows(client, table, columns, rows) {
  const values = [];
  const tuples = rows.map((row) => `(${row.map((value) => `$${values.push(value)}`).join(', ')})`);
  return client.query(`INSERT INTO ${table} (${columns.join(', ')}) VALUES ${tuples.join(', ')}`, values);
}

/** Column name to its SQL type (such as 'character varying(40)') of a table on the search_path. */
async function columnTypes(client, table) {
  const { rows } = await client.query(
    'SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute ' +
      'WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped',
    [table],
  );
  return new Map(rows.map((row) => [row.attname, row.type]));
}

async function withPostgres(url, run) {
  const client = new pg.Client({ connectionString: url, application_name: 'visits-bench' });
  await client.connect();
  try {
    return await run(client);
  } finally {
    await client.end();
  }
}

/** Loads in one transaction (the tables are unqualified: search_path picks the bench schema). */
async function loadPostgres(url, schema, count, visit, branches) {
  return withPostgres(url, async (client) => {
    await client.query(`SET search_path TO "${schema}"`);
    await client.query('BEGIN');
    try {
      await insertRows(client, 'clients', ['id', 'name', 'change_seq'], [[CLIENT.id, CLIENT.name, count]]);
      await insertRows(client, 'brands', ['id', 'client_id', 'name'], [[BRAND.id, CLIENT.id, BRAND.name]]);
      const branchRows = branches.map((b) => [b.id, CLIENT.id, BRAND.id, b.name, b.branchCode]);
      await insertRows(client, 'branches', ['id', 'client_id', 'brand_id', 'name', 'branch_code'], branchRows);
      // A column per parameter, as an array: the server unnests them into rows. Each array is
      // cast to its column's own type (read from the catalogue, so no type is repeated here).
      const types = await columnTypes(client, 'visits');
      const arrays = VISIT_COLUMNS.map((column, n) => {
        if (!types.has(column)) throw new Error(`visits has no column ${column}`);
        return `$${n + 1}::${types.get(column)}[]`;
      });
      const sql = `INSERT INTO visits (${VISIT_COLUMNS.join(', ')}) SELECT * FROM unnest(${arrays.join(', ')})`;
      for (let first = 0; first < count; first += PG_BATCH_ROWS) {
        const columns = VISIT_COLUMNS.map(() => []);
        for (let i = first; i < Math.min(first + PG_BATCH_ROWS, count); i++) {
          const row = visit(i);
          row.completed_at = new Date(row.completed_at).toISOString();
          row.changed_at = new Date(row.changed_at).toISOString();
          VISIT_COLUMNS.forEach((column, n) => columns[n].push(row[column]));
        }
        await client.query(sql, columns);
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
    await client.query('VACUUM (ANALYZE) clients, brands, branches, visits');
    return performance.now() - analyzeStart;
  });
}

// ---------------------------------------------------------------------------------------------
// Places: an isolated database per run
// ---------------------------------------------------------------------------------------------

/** The environment of the service and its CLI, without any DATABASE_* or VISITS_CACHE_MB the caller has set. */
function baseEnv(dataDir) {
  const env = { ...process.env, DATA_DIR: dataDir };
  delete env.DATABASE_URL;
  delete env.DATABASE_SCHEMA;
  // The cached runs measure the default page cache; the uncached ones set it to 0.
  delete env.VISITS_CACHE_MB;
  return env;
}

async function sqlitePlace(scratch) {
  const dataDir = await mkdtemp(join(scratch, 'sqlite-'));
  defer(`remove ${dataDir}`, () => rm(dataDir, { recursive: true, force: true }));
  return { env: baseEnv(dataDir), label: `SQLite ${join(dataDir, 'results.sqlite')}` };
}

async function postgresPlace(scratch, url) {
  const schema = `bench_${Date.now()}`;
  // Never adopt (and later drop) a schema that is not ours.
  const taken = await withPostgres(url, (c) => c.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]));
  if (taken.rowCount > 0) throw new Error(`schema ${schema} exists already`);
  defer(`drop schema ${schema}`, () => withPostgres(url, (c) => c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`)));
  const dataDir = await mkdtemp(join(scratch, 'postgres-'));
  defer(`remove ${dataDir}`, () => rm(dataDir, { recursive: true, force: true }));
  const env = { ...baseEnv(dataDir), DATABASE_URL: url, DATABASE_SCHEMA: schema };
  return { env, schema, label: `PostgreSQL schema ${schema}` };
}

async function runCli(env, args) {
  let stdout;
  try {
    ({ stdout } = await execFileAsync(process.execPath, [CLI, '--json', ...args], { cwd: ROOT, env, maxBuffer: 16 * MB }));
  } catch (error) {
    throw new Error(`cli ${args.slice(0, 2).join(' ')} failed: ${error.stderr?.trim() || message(error)}`, { cause: error });
  }
  return JSON.parse(stdout);
}

// ---------------------------------------------------------------------------------------------
// Child processes: the service and the bare server each get their own process (and core), so
// neither shares an event loop with autocannon
// ---------------------------------------------------------------------------------------------

function startChild(label, args, env) {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  // Both pipes are drained (a full pipe would stall the child); the tail explains a failure.
  let tail = '';
  const keep = (chunk) => {
    tail = (tail + chunk).slice(-8000);
  };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  child.on('error', (error) => keep(`\n[spawn error] ${message(error)}\n`));
  defer(`stop ${label}`, () => stopChild(child));
  return { label, process: child, output: () => tail };
}

async function stopChild(child) {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(force);
}

/** Polls `check` until it returns a value; fails when the child exits first or time runs out. */
async function waitFor(child, timeoutMs, check) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const exit = child.process.exitCode ?? child.process.signalCode;
    if (exit !== null) throw new Error(`${child.label} exited (${exit}) while starting:\n${child.output()}`);
    const value = await check().catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${child.label} not ready after ${timeoutMs} ms:\n${child.output()}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

async function freePort() {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address();
  server.close();
  await once(server, 'close');
  return port;
}

/** The service as deployed; `cacheMB` '0' turns the page cache off, undefined keeps its default. */
async function startService(env, cacheMB = undefined) {
  const port = await freePort();
  const child = startChild(cacheMB === '0' ? 'service (cache off)' : 'service', [MAIN], {
    ...env,
    PORT: String(port),
    HOST: '127.0.0.1',
    SEED_DEMO: 'false',
    LOG_LEVEL: 'warn',
    // As deployed (see Dockerfile): the schema is current, migrations ran as a separate step.
    MIGRATIONS_RUN: 'false',
    NODE_ENV: 'production',
    // The limits stay on (the guard's cost is part of the measurement) but far above the load.
    RATE_LIMIT_PER_MINUTE: '1000000',
    TOKEN_RATE_LIMIT_PER_MINUTE: '100000',
    METRICS_PORT: '0',
    ...(cacheMB === undefined ? {} : { VISITS_CACHE_MB: cacheMB }),
  });
  const url = `http://127.0.0.1:${port}`;
  await waitFor(child, READY_TIMEOUT_MS, async () => ((await fetch(`${url}/health/ready`)).status === 200 ? true : undefined));
  return { ...child, url, pid: child.process.pid };
}

async function startBareServer(bodyFile, contentType) {
  const child = startChild('bare server', [BARE_SERVER, bodyFile, contentType], process.env);
  const port = await waitFor(child, 10_000, async () => {
    const match = /\{"port":(\d+)\}/.exec(child.output());
    return match ? Number(match[1]) : undefined;
  });
  return { ...child, url: `http://127.0.0.1:${port}` };
}

async function startFrameworkFloor(bodyFile, contentType, routePath) {
  const child = startChild('framework floor', [FRAMEWORK_FLOOR, bodyFile, contentType, routePath], process.env);
  const port = await waitFor(child, READY_TIMEOUT_MS, async () => {
    const match = /\{"port":(\d+)\}/.exec(child.output());
    return match ? Number(match[1]) : undefined;
  });
  return { ...child, url: `http://127.0.0.1:${port}` };
}

// ---------------------------------------------------------------------------------------------
// HTTP
// ---------------------------------------------------------------------------------------------

/** The path of a page of the bench client's window. */
function pagePath(dates, skip, take) {
  const query = new URLSearchParams({
    SvcClientId: String(CLIENT.id),
    FromDate: dates.from,
    ToDate: dates.to,
    Skip: String(skip),
    Take: String(take),
  });
  return `/visits/standard?${query}`;
}

/** The window ends where the generator says: Skip=windowVisits gives an empty page. */
async function checkWindowEnd(service, credential, dates, windowCount) {
  await fetchPage(`${service.url}${pagePath(dates, windowCount - 1, 2)}`, await pageHeaders(service, credential), 2, 1);
}

/** A client_credentials token request (client_secret_post), as fetch and autocannon take it. */
function tokenRequest(credential) {
  return {
    method: 'POST',
    headers: { 'svc-api-key': credential.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: credential.clientId,
      client_secret: credential.clientSecret,
    }).toString(),
  };
}

async function getToken(url, credential) {
  const response = await fetch(`${url}/connect/token`, tokenRequest(credential));
  const body = await response.text();
  if (response.status !== 200) throw new Error(`POST /connect/token answered ${response.status}: ${body}`);
  return JSON.parse(body).access_token;
}

/** The headers of a page request, with a fresh token: a long BENCH_DURATION must not outlive one (an hour). */
async function pageHeaders(service, credential) {
  return { 'svc-api-key': credential.apiKey, authorization: `Bearer ${await getToken(service.url, credential)}` };
}

/** Fetches one page and checks it: 200 with exactly `take` visits (a full page, by default). */
async function fetchPage(url, headers, take, expected = take) {
  const response = await fetch(url, { headers });
  const bytes = Buffer.from(await response.arrayBuffer());
  if (response.status !== 200) {
    throw new Error(`GET ${url} answered ${response.status}: ${bytes.toString('utf8').slice(0, 500)}`);
  }
  const visits = JSON.parse(bytes.toString('utf8')).data?.visits;
  if (visits?.length !== expected) throw new Error(`GET ${url} gave ${visits?.length} visits, expected ${expected}`);
  return { bytes, contentType: response.headers.get('content-type'), headers: Object.fromEntries(response.headers) };
}

// ---------------------------------------------------------------------------------------------
// Measuring
// ---------------------------------------------------------------------------------------------

function procStatusKb(pid, field) {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null; // no /proc (not Linux) or the process is gone
  }
}

const kbToMB = (kb) => (kb === null ? null : round((kb * 1024) / MB, 1));

/** Samples the resident set of `pid` until the returned stop function is called; gives the peak in MB. */
function watchRss(pid) {
  let peak = null;
  const sample = () => {
    const kb = procStatusKb(pid, 'VmRSS');
    if (kb !== null) peak = Math.max(peak ?? 0, kb);
  };
  sample();
  const timer = setInterval(sample, RSS_POLL_MS);
  return () => {
    clearInterval(timer);
    sample();
    return kbToMB(peak);
  };
}

/** One autocannon run; also counts the responses slower than SLOW_MS (from its response events). */
function cannon(options) {
  return new Promise((done, fail) => {
    let slow = 0;
    const instance = autocannon(options, (error, result) => (error ? fail(error) : done({ result, slow })));
    instance.on('response', (_client, _status, _bytes, responseTime) => {
      if (responseTime > SLOW_MS) slow++;
    });
  });
}

/**
 * A warm-up run (discarded), then the measured run with identical settings. `request` holds
 * url and headers, and method and body when not a GET.
 */
async function measure(request, settings, rssPid, durationSeconds = settings.durationSeconds, settle = undefined) {
  const options = { ...request, connections: settings.connections, pipelining: 1, timeout: REQUEST_TIMEOUT_SECONDS };
  await cannon({ ...options, duration: WARMUP_SECONDS });
  // Slow requests the warm-up left running would otherwise be counted against the run.
  if (settle) await settle();
  const stopRss = rssPid === undefined ? null : watchRss(rssPid);
  const { result, slow } = await cannon({ ...options, duration: durationSeconds });
  const peakRssMB = stopRss ? stopRss() : null;
  return {
    durationSeconds,
    requests: result.requests.total,
    requestsPerSec: round(result.requests.average, 1),
    latencyMs: {
      p50: result.latency.p50,
      p90: result.latency.p90,
      p99: result.latency.p99,
      p99_9: result.latency.p99_9,
      max: result.latency.max,
    },
    slowerThan1s: slow,
    throughputMBps: round(result.throughput.average / MB, 2),
    ok2xx: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    statusCodes: result.statusCodeStats,
    peakRssMB,
  };
}

/** Anything that makes a run's figures suspect, said loudly right away and again at the end. */
function problemsOf(run, what) {
  const found = [];
  if (run.requests === 0) found.push(`${what}: no response within the run; lengthen it`);
  if (run.non2xx > 0) found.push(`${what}: ${run.non2xx} non-2xx responses (${JSON.stringify(run.statusCodes)})`);
  // autocannon counts a timeout (no answer within REQUEST_TIMEOUT_SECONDS) as an error too.
  if (run.errors > 0) found.push(`${what}: ${run.errors} errors (${run.timeouts} of them timeouts)`);
  for (const line of found) console.error(`\n!!!!!!!! ${line} !!!!!!!!\n`);
  return found;
}

/** Measures one reference server (bare or framework floor) on the page's bytes, then stops it. */
async function measureReference(start, path, headers, settings) {
  const server = await start();
  try {
    return await measure({ url: `${server.url}${path}`, headers }, settings);
  } finally {
    await stopChild(server.process);
  }
}

async function benchPage(kind, spec, skip, service, credential, context, path = pagePath(context.dates, skip, spec.take)) {
  const { settings, scratch } = context;
  const { take } = spec;
  const headers = await pageHeaders(service, credential);
  const page = await fetchPage(`${service.url}${path}`, headers, take);
  const bodyFile = join(scratch, `page-${kind}-${spec.name}.json`);
  await writeFile(bodyFile, page.bytes);

  const what = `${kind} ${spec.label}`;
  log(`[${kind}] ${spec.label} (${skip === null ? path.replace(/after=[^&]+/, 'after=…') : `Skip=${skip}`}): ${page.bytes.length} bytes; measuring the service (${settings.durationSeconds} s)`);
  const serviceRun = await measure({ url: `${service.url}${path}`, headers }, settings, service.pid);
  // The references stand for this exact answer: check the service still gives it.
  const after = await fetchPage(`${service.url}${path}`, headers, take);
  const sameBytes = after.bytes.equals(page.bytes);

  log(`[${kind}] ${spec.label}: measuring the bare server (${settings.durationSeconds} s)`);
  const bareRun = await measureReference(() => startBareServer(bodyFile, page.contentType), path, headers, settings);
  log(`[${kind}] ${spec.label}: measuring the framework floor (${settings.durationSeconds} s)`);
  const floorRun = await measureReference(
    () => startFrameworkFloor(bodyFile, page.contentType, path.slice(0, path.indexOf('?'))),
    path,
    headers,
    settings,
  );

  const problems = [
    ...problemsOf(serviceRun, `${what} service`),
    ...problemsOf(bareRun, `${what} bare`),
    ...problemsOf(floorRun, `${what} floor`),
  ];
  if (!sameBytes) problems.push(`${what}: the service's page changed during the run`);
  return {
    name: spec.name,
    label: spec.label,
    deep: spec.deep,
    take,
    skip,
    path,
    bodyBytes: page.bytes.length,
    bytesPerVisit: Math.round(page.bytes.length / take),
    contentType: page.contentType,
    serviceResponseHeaders: redactHeaders(page.headers),
    service: serviceRun,
    bare: bareRun,
    floor: floorRun,
    ratio: round(serviceRun.requestsPerSec / bareRun.requestsPerSec, 3),
    floorRatio: round(serviceRun.requestsPerSec / floorRun.requestsPerSec, 3),
    problems,
  };
}

/**
 * The page's request shape on a service with the page cache off, each request for another
 * page of the same size: Skip walks the window in steps of Take (the deep row: its last 50
 * pages), so neither a cache nor the single render of concurrent equal requests can help.
 * The ratios are to the references measured for the page itself (same size, same bytes).
 */
async function benchPageUncached(kind, page, service, credential, context, windowCount) {
  const { dates, settings } = context;
  const { take } = page;
  const skips = page.deep
    ? Array.from({ length: 50 }, (_, i) => page.skip - i * take).filter((skip) => skip >= 0)
    : Array.from({ length: Math.floor((windowCount - take) / take) + 1 }, (_, i) => i * take);
  let next = 0;
  const request = {
    url: service.url,
    headers: await pageHeaders(service, credential),
    requests: [{ method: 'GET', setupRequest: (request) => ({ ...request, path: pagePath(dates, skips[next++ % skips.length], take) }) }],
  };
  const label = `${page.label}, cache off`;
  log(`[${kind}] ${label} (${skips.length} distinct pages, Skip ${Math.min(...skips)}..${Math.max(...skips)}): measuring the service (${settings.durationSeconds} s)`);
  const run = await measure(request, settings, service.pid);
  return {
    label,
    distinctPages: skips.length,
    skips: [Math.min(...skips), Math.max(...skips)],
    service: run,
    ratio: round(run.requestsPerSec / page.bare.requestsPerSec, 3),
    floorRatio: round(run.requestsPerSec / page.floor.requestsPerSec, 3),
    problems: problemsOf(run, `${kind} ${label} service`),
  };
}

/**
 * A change feed page: the page after the one that a first call (Since) gives, at `spec.at` of
 * the loaded history. A feed page is never cached: each request reads the database again.
 */
async function benchFeed(kind, spec, service, credential, context, count) {
  const since = new Date(changedAt(Math.floor(spec.at * count), count)).toISOString();
  const first = `${service.url}/visits/standard/changes?SvcClientId=${CLIENT.id}&Take=${spec.take}&Since=${since}`;
  const firstPage = await fetchPage(first, await pageHeaders(service, credential), spec.take);
  const after = JSON.parse(firstPage.bytes.toString('utf8')).paging.after;
  const path = `/visits/standard/changes?SvcClientId=${CLIENT.id}&Take=${spec.take}&after=${encodeURIComponent(after)}`;
  return benchPage(kind, spec, null, service, credential, context, path);
}

/** POST /connect/token under the same load: one scrypt verification per request. */
async function benchToken(kind, service, credential, context) {
  const { settings } = context;
  const seconds = settings.tokenDurationSeconds;
  log(`[${kind}] POST /connect/token: measuring the service (${seconds} s)`);
  const request = { url: `${service.url}/connect/token`, ...tokenRequest(credential) };
  // The warm-up leaves up to `connections` scrypt checks queued; one more token, answered
  // after them, shows the queue has drained before the measured run starts.
  const serviceRun = await measure(request, settings, service.pid, seconds, () => getToken(service.url, credential));
  return {
    name: 'token',
    label: 'token',
    path: '/connect/token',
    service: serviceRun,
    problems: problemsOf(serviceRun, `${kind} token service`),
  };
}

/**
 * Visits in the request window: day d of the data holds visits ceil(d*count/DAYS) up to
 * ceil((d+1)*count/DAYS)-1 (see visitGenerator), and the window is the last WINDOW_DAYS days.
 */
function windowVisits(count) {
  return count - Math.ceil(((DATA_DAYS - WINDOW_DAYS) * count) / DATA_DAYS);
}

function redactHeaders(headers) {
  const { date: _date, 'x-request-id': _id, ...rest } = headers;
  return rest;
}

/** The deep page's latency against the first page's. */
function deepVsFirst(deep, first) {
  return {
    firstP50: first.latencyMs.p50,
    firstP99: first.latencyMs.p99,
    deepP50: deep.latencyMs.p50,
    deepP99: deep.latencyMs.p99,
    p99Ratio: first.latencyMs.p99 > 0 ? round(deep.latencyMs.p99 / first.latencyMs.p99, 2) : null,
  };
}

/** What the service said (it logs warnings and errors only) usually explains a failure. */
function failed(service, error) {
  const exit = service.process.exitCode ?? service.process.signalCode;
  console.error(`\n[${service.label}] ${exit === null ? 'still running' : `exited (${exit})`}; its output:\n${service.output()}`);
  throw error;
}

async function benchDatabase(kind, context) {
  const { settings, scratch, dates } = context;
  const mark = cleanups.length;
  try {
    const place = kind === 'sqlite' ? await sqlitePlace(scratch) : await postgresPlace(scratch, settings.postgresUrl);
    log(`\n[${kind}] ${place.label}: running migrations`);
    await runCli(place.env, ['migrations', 'run']);

    const branches = benchBranches();
    const count = settings.visits[kind];
    const visit = await visitGenerator(count, dates, branches);
    log(`[${kind}] loading ${count} visits over ${dates.firstDataDay}..${dates.lastDataDay}`);
    const loadStart = performance.now();
    let analyzeMs = null;
    if (kind === 'sqlite') loadSqlite(join(place.env.DATA_DIR, 'results.sqlite'), count, visit, branches);
    else analyzeMs = await loadPostgres(settings.postgresUrl, place.schema, count, visit, branches);
    const loadMs = performance.now() - loadStart - (analyzeMs ?? 0);
    const load = {
      visits: count,
      visitsPerDay: round(count / DATA_DAYS, 1),
      windowVisits: windowVisits(count),
      seconds: round(loadMs / 1000, 2),
      visitsPerSec: Math.round(count / (loadMs / 1000)),
      analyzeSeconds: analyzeMs === null ? null : round(analyzeMs / 1000, 2),
    };
    log(
      `[${kind}] loaded in ${load.seconds} s (${load.visitsPerSec} visits/s, generation included)` +
        (analyzeMs === null ? '' : `; VACUUM (ANALYZE) ${load.analyzeSeconds} s`),
    );

    const credential = await runCli(place.env, [
      'credentials',
      'add',
      '--clients',
      String(CLIENT.id),
      '--scopes',
      'visits/standard.read visits/plus.read',
      '--name',
      'visits bench',
    ]);
    const service = await startService(place.env);
    log(`[${kind}] service ready at ${service.url} (pid ${service.pid})`);
    const pages = [];
    const feeds = [];
    let token;
    let servicePeakRssMB;
    let uncachedPeakRssMB;
    try {
      // The deep page is the last full page of the window: check that the window holds exactly
      // the visits the generator put there (nothing after the deep page), so Skip means it.
      const deepSkip = load.windowVisits - PAGES.find((p) => p.deep).take;
      if (deepSkip < 0) throw new Error(`the window holds only ${load.windowVisits} visits; load more`);
      await checkWindowEnd(service, credential, dates, load.windowVisits);
      for (const spec of PAGES) pages.push(await benchPage(kind, spec, spec.deep ? deepSkip : 0, service, credential, context));
      // The high-water mark covers start-up and the pages, warm-ups included (not the token run).
      servicePeakRssMB = kbToMB(procStatusKb(service.pid, 'VmHWM'));
      for (const spec of FEEDS) feeds.push(await benchFeed(kind, spec, service, credential, context, count));
      token = await benchToken(kind, service, credential, context);
    } catch (error) {
      failed(service, error);
    }
    await stopChild(service.process);
    const uncachedService = await startService(place.env, '0');
    log(`[${kind}] service with the page cache off ready at ${uncachedService.url} (pid ${uncachedService.pid})`);
    try {
      for (const page of pages) page.uncached = await benchPageUncached(kind, page, uncachedService, credential, context, load.windowVisits);
      uncachedPeakRssMB = kbToMB(procStatusKb(uncachedService.pid, 'VmHWM'));
    } catch (error) {
      failed(uncachedService, error);
    }
    await stopChild(uncachedService.process);
    const first = pages.find((p) => p.name === 'first');
    const deep = pages.find((p) => p.name === 'deep');
    const deepPage = { skip: deep.skip, cached: deepVsFirst(deep.service, first.service), uncached: deepVsFirst(deep.uncached.service, first.uncached.service) };
    return { database: kind, load, servicePeakRssMB, uncachedPeakRssMB, deepPage, pages, feeds, token };
  } finally {
    // Stop this database's service and remove its data before the next database runs.
    await cleanUpTo(mark);
  }
}

// ---------------------------------------------------------------------------------------------
// Report
// ---------------------------------------------------------------------------------------------

/** Plain-text table: text columns left-aligned, numbers right-aligned. */
function formatTable(header, rows) {
  const cells = [header, ...rows].map((row) => row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))));
  const widths = header.map((_, c) => Math.max(...cells.map((row) => row[c].length)));
  const numeric = header.map((_, c) => rows.every((row) => typeof row[c] === 'number' || row[c] === null));
  const line = (row) => row.map((cell, c) => (numeric[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** One table per database: a row per measured request, the references beside the service. */
function resultsTable(db) {
  const header = [
    db.database,
    'body KB',
    'svc req/s',
    'p50',
    'p99',
    'max',
    '>1s',
    'RSS MB',
    'non2xx',
    'err',
    'bare req/s',
    'bare p99',
    'bare >1s',
    'floor req/s',
    'floor p50',
    'floor p99',
    'floor >1s',
    'svc/bare',
    'svc/floor',
  ];
  // A cache-off row stands beside the references of its page (pages of the same size).
  const uncached = db.pages.map((p) => ({ ...p.uncached, bodyBytes: p.bodyBytes, bare: p.bare, floor: p.floor }));
  const rows = [...db.pages, ...uncached, ...(db.feeds ?? []), db.token].map((p) => [
    p.label,
    p.bodyBytes === undefined ? null : round(p.bodyBytes / 1000, 1),
    p.service.requestsPerSec,
    p.service.latencyMs.p50,
    p.service.latencyMs.p99,
    p.service.latencyMs.max,
    p.service.slowerThan1s,
    p.service.peakRssMB,
    p.service.non2xx,
    p.service.errors,
    p.bare?.requestsPerSec ?? null,
    p.bare?.latencyMs.p99 ?? null,
    p.bare?.slowerThan1s ?? null,
    p.floor?.requestsPerSec ?? null,
    p.floor?.latencyMs.p50 ?? null,
    p.floor?.latencyMs.p99 ?? null,
    p.floor?.slowerThan1s ?? null,
    p.ratio ?? null,
    p.floorRatio ?? null,
  ]);
  return formatTable(header, rows);
}

async function writeResults(stamp, report) {
  await mkdir(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `visits-${stamp}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}

// ---------------------------------------------------------------------------------------------
// Main
// ---------------------------------------------------------------------------------------------

async function main() {
  const settings = readSettings();
  const startedAt = new Date();
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const machine = machineFacts();
  const dates = benchDates();
  log(`node ${machine.node} on ${machine.platform}; ${machine.cpus} x ${machine.cpuModel}; ${machine.totalMemoryGB} GB memory`);
  log(
    `settings: ${settings.databases.map((d) => `${settings.visits[d]} visits on ${d}`).join(', ')}, ` +
      `${settings.durationSeconds} s per run (+${WARMUP_SECONDS} s warm-up), ` +
      `${settings.connections} connections, databases ${settings.databases.join(',')}`,
  );
  log(`window: FromDate=${dates.from} ToDate=${dates.to} (today in ${SERVICE_TIMEZONE}: ${dates.today})`);

  const scratch = await mkdtemp(join(os.tmpdir(), 'visits-bench-'));
  defer(`remove ${scratch}`, () => rm(scratch, { recursive: true, force: true }));
  const context = { settings, dates, scratch };
  const databases = [];
  for (const kind of settings.databases) databases.push(await benchDatabase(kind, context));

  const dataSet = {
    client: CLIENT.id,
    brand: BRAND.id,
    branches: BRANCH_COUNT,
    visits: settings.visits,
    days: `${dates.firstDataDay}..${dates.lastDataDay}`,
    window: `${dates.from}..${dates.to}`,
    bytesPerVisit: databases[0]?.pages.map((p) => ({ page: p.name, take: p.take, bytes: p.bytesPerVisit })),
  };
  log('');
  log(`machine: node ${machine.node}, ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.totalMemoryGB} GB memory`);
  log(
    `data set: visits of client ${CLIENT.id} over ${dataSet.days}, ${BRANCH_COUNT} branches; window ${dataSet.window}; ` +
      `${settings.connections} connections, ${settings.durationSeconds} s per page run, ` +
      `${settings.tokenDurationSeconds} s for the token run (each after ${WARMUP_SECONDS} s warm-up)`,
  );
  for (const db of databases) {
    log('');
    log(
      `${db.database}: ${db.load.visits} visits (${db.load.visitsPerDay}/day, ${db.load.windowVisits} in the window), ` +
        `loaded in ${db.load.seconds} s (${db.load.visitsPerSec} visits/s)` +
        (db.load.analyzeSeconds === null ? '' : ` + VACUUM (ANALYZE) ${db.load.analyzeSeconds} s`) +
        `; service peak RSS (VmHWM, start-up and pages) ${db.servicePeakRssMB ?? '-'} MB, with the cache off ${db.uncachedPeakRssMB ?? '-'} MB`,
    );
    for (const mode of ['cached', 'uncached']) {
      const d = db.deepPage[mode];
      log(
        `${db.database}: deep page (Skip=${db.deepPage.skip}${mode === 'cached' ? '' : ' and the 49 pages before it, cache off'}) ` +
          `p50/p99 ${d.deepP50}/${d.deepP99} ms vs first page${mode === 'cached' ? '' : 's'} ${d.firstP50}/${d.firstP99} ms; ` +
          `deep p99 / first p99 = ${d.p99Ratio ?? '-'}`,
      );
    }
    log(resultsTable(db));
  }
  log('');
  log(
    '(latency in ms; >1s = responses slower than 1 s; MB = 10^6 bytes; RSS = peak service VmRSS sampled during the ' +
      'measured run; non2xx, err (connection errors and timeouts) are the service\'s; bare = node:http, ' +
      'floor = minimal NestJS/Express app, both serving the same bytes; token has no reference)',
  );
  log(
    '(rows without "cache off": the default configuration, where the repeated page comes from the page cache; ' +
      '"cache off": VISITS_CACHE_MB=0 and every request for another page, read from the database and rendered)',
  );

  const problems = databases.flatMap((db) => [...db.pages, ...db.pages.map((p) => p.uncached), ...db.feeds, db.token].flatMap((p) => p.problems));
  const file = await writeResults(stamp, {
    startedAt: startedAt.toISOString(),
    settings: { ...settings, warmupSeconds: WARMUP_SECONDS, pages: PAGES, feeds: FEEDS },
    machine,
    dataSet,
    databases,
    problems,
  });
  log(`\nresults: ${relative(process.cwd(), file)}`);
  if (problems.length > 0) {
    console.error(`\n!!!!!!!! ${problems.length} problem(s); these figures are not valid:`);
    for (const problem of problems) console.error(`!!!!!!!!   ${problem}`);
    return false;
  }
  return true;
}

// Ctrl-C or a kill: still stop the children and drop the schema.
for (const signal of ['SIGINT', 'SIGTERM']) {
  process.once(signal, () => {
    console.error(`\n${signal}: cleaning up`);
    cleanUpTo(0).finally(() => process.exit(130));
  });
}

let ok = false;
try {
  ok = await main();
} catch (error) {
  console.error(`\nbench failed: ${describeError(error)}`);
} finally {
  await cleanUpTo(0);
}
process.exit(ok ? 0 : 1);
