// Benchmark of GET /visits/standard through the full stack (HTTP, API key and token checks,
// query validation, database, JSON) against two references that serve the very same bytes:
// a bare node:http server (the ceiling; the gap is what the service costs in all) and a
// minimal NestJS app on Express (the framework floor; the gap is what the service adds on top
// of the framework). Load comes from wrk (C, 2 threads), so the load generator is not what
// limits a run. Per page, references and service are measured in turn, twice (A B A B), each
// run after a warm-up; the figures are the means, and both runs are printed.
//
// Rows (BENCH_ONLY names): Take=100 first page (first), a deep page at the end of the window
// (deep), Take=1000 (take1000), each with the default page cache (the same page repeated) and
// on a second service with the cache off (first-off ...: VISITS_CACHE_MB=0, every request
// another page: many partners pulling different data at once); the first page and Take=1000
// with Accept-Encoding gzip and br (first-gzip ...), against the bare server sending the same
// compressed bytes, on both services (first-gzip-off ...: every request another page, each
// compressed as it is asked for, which is what partners pulling different data cost and where
// the service's memory peaks); the change feed at Take=500 from the start of the history and at 95% of
// it (feed-start, feed-deep), every request the next page; POST /connect/token (token).
//
// Run: npm run bench (builds the service and the bench, then runs this file). Needs wrk (the
// Debian package; installed with apt-get when missing). Settings, from the environment:
//   BENCH_SQLITE_VISITS    visits loaded for client 1001 on SQLite (default 200000)
//   BENCH_POSTGRES_VISITS  visits loaded for client 1001 on PostgreSQL (default 1000000)
//   BENCH_VISITS           when set, the visits on every database (overrides the two above)
//   BENCH_DURATION         seconds per measured run (default 10)
//   BENCH_WARMUP           seconds of the warm-up before each measured run (default 5)
//   BENCH_CONNECTIONS      concurrent connections per run (default 50; the token run uses 32)
//   BENCH_DATABASES        comma-separated, sqlite and/or postgres (default sqlite,postgres)
//   BENCH_ONLY             comma-separated rows to run (default all); a name also selects the
//                          rows named after it with a suffix: first = first, first-off,
//                          first-gzip, first-br, first-gzip-off, first-br-off;
//                          feed = feed-start, feed-deep
//   BENCH_TOKEN_DURATION   seconds of the measured token run (default BENCH_DURATION)
//   BENCH_POSTGRES_URL     server of the postgres runs (default postgres://postgres@127.0.0.1:5432/test)
//
// Each database gets a place of its own (a temporary DATA_DIR; a fresh schema bench_<time>)
// that is removed afterwards, also on failure or Ctrl-C. Output: tables on stdout and
// bench/results/visits-<time>.json. Exit code 1 when anything failed or a run saw responses
// with status >= 400 or socket errors (its figures would not mean what they seem to).

import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import { join, relative } from 'node:path';
import { benchBranches, BRANCH_COUNT, visitGenerator, windowVisits } from './data-set.js';
import { fetchPage, pageHeaders, pagePath, type Credential } from './http.js';
import { loadPostgres, loadSqlite, postgresPlace, runCli, sqlitePlace, type Place } from './load.js';
import { cleanupMark, cleanUpTo, defer, kbToMB, procStatusKb, startBenchService, type BenchService } from './processes.js';
import { printDatabase, printLegend, writeResults, type DatabaseResult } from './report.js';
import { benchCompressed, benchFeed, benchPage, benchToken, type Row, type RunContext } from './runs.js';
import {
  benchDates,
  CLIENT,
  DATA_DAYS,
  describeError,
  ENCODINGS,
  FEEDS,
  IDLE_AFTER_SECONDS,
  log,
  machineFacts,
  PAGES,
  readSettings,
  round,
  SERVICE_TIMEZONE,
  type BenchDates,
  type Database,
  type Settings,
} from './settings.js';
import { ensureWrk, stopLoad } from './wrk.js';

interface Context {
  settings: Settings;
  dates: BenchDates;
  scratch: string;
}

/** Creates the place, runs the migrations and loads the data set; gives the load's figures. */
async function prepare(kind: Database, context: Context): Promise<{ place: Place; load: DatabaseResult['load'] }> {
  const { settings, scratch, dates } = context;
  const place = kind === 'sqlite' ? await sqlitePlace(scratch) : await postgresPlace(scratch, settings.postgresUrl);
  log(`\n[${kind}] ${place.label}: running migrations`);
  await runCli(place.env, ['migrations', 'run']);
  const branches = benchBranches();
  const count = settings.visits[kind];
  const visit = visitGenerator(count, dates, branches);
  log(`[${kind}] loading ${count} visits over ${dates.firstDataDay}..${dates.lastDataDay}`);
  const loadStart = performance.now();
  let analyzeMs: number | null = null;
  if (kind === 'sqlite') loadSqlite(join(place.env.DATA_DIR, 'results.sqlite'), count, visit, branches);
  else analyzeMs = await loadPostgres(settings.postgresUrl, place.schema!, count, visit, branches);
  const loadMs = performance.now() - loadStart - (analyzeMs ?? 0);
  const load = {
    visits: count,
    visitsPerDay: round(count / DATA_DAYS, 1),
    windowVisits: windowVisits(count),
    seconds: round(loadMs / 1000, 2),
    visitsPerSec: Math.round(count / (loadMs / 1000)),
    analyzeSeconds: analyzeMs === null ? null : round(analyzeMs / 1000, 2),
  };
  log(`[${kind}] loaded in ${load.seconds} s (${load.visitsPerSec} visits/s, generation included)` + (analyzeMs === null ? '' : `; VACUUM (ANALYZE) ${load.analyzeSeconds} s`));
  return { place, load };
}

/** The services the selected rows need: the default one, the cache-off one, or both (started one after the other). */
async function startServices(kind: Database, place: Place, only: Set<string>): Promise<{ cached?: BenchService; off?: BenchService }> {
  const rows = [...only];
  const services: { cached?: BenchService; off?: BenchService } = {};
  if (rows.some((row) => !row.endsWith('-off'))) services.cached = await startBenchService(place.env, false);
  if (rows.some((row) => row.endsWith('-off'))) services.off = await startBenchService(place.env, true);
  for (const service of [services.cached, services.off]) if (service) log(`[${kind}] ${service.label} ready at ${service.url} (pid ${service.pid})`);
  return services;
}

/** Every selected row, in table order. */
async function measureRows(context: RunContext, deepSkip: number): Promise<Row[]> {
  const rows: Row[] = [];
  const skipOf = (deep: boolean): number => (deep ? deepSkip : 0);
  for (const spec of PAGES) rows.push(...(await benchPage(context, spec, skipOf(spec.deep))));
  // Cached rows first, then the cache-off rows, as the table has always listed them.
  rows.sort((a, b) => Number(a.name.endsWith('-off')) - Number(b.name.endsWith('-off')));
  for (const cacheOff of [false, true]) {
    for (const spec of PAGES.filter((p) => p.compressed)) {
      for (const encoding of ENCODINGS) rows.push(...[await benchCompressed(context, spec, skipOf(spec.deep), encoding, cacheOff)].filter((r) => r !== null));
    }
  }
  for (const spec of FEEDS) rows.push(...[await benchFeed(context, spec)].filter((r) => r !== null));
  rows.push(...[await benchToken(context)].filter((r) => r !== null));
  return rows;
}

/** What a service said (it logs warnings and errors only) usually explains a failure. */
function reportOutput(services: (BenchService | undefined)[]): void {
  for (const service of services) {
    if (!service) continue;
    const exit = service.exit();
    // The bench stops its services only at clean-up, after this: exit 0 means a signal from outside.
    const how = exit === null ? 'still running' : `exited (${exit}${exit === 0 ? ': stopped by SIGTERM or SIGINT from outside the bench' : ''})`;
    console.error(`\n[${service.label}] ${how}; its output:\n${service.output()}`);
  }
}

async function benchDatabase(kind: Database, context: Context): Promise<DatabaseResult> {
  const { settings, dates } = context;
  const mark = cleanupMark();
  try {
    const { place, load } = await prepare(kind, context);
    const credential = await runCli<Credential>(place.env, [
      'credentials',
      'add',
      '--clients',
      String(CLIENT.id),
      '--scopes',
      'visits/standard.read visits/plus.read',
      '--name',
      'visits bench',
    ]);
    const { cached, off } = await startServices(kind, place, settings.only);
    const run: RunContext = { ...context, kind, credential, cached, off, count: load.visits, windowCount: load.windowVisits };
    // The deep page is the last full page of the window: check that the window holds exactly
    // the visits the generator put there (nothing after the deep page), so Skip means it.
    const deepSkip = load.windowVisits - PAGES.find((p) => p.deep)!.take;
    if (deepSkip < 0) throw new Error(`the window holds only ${load.windowVisits} visits; load more`);
    const any = (cached ?? off)!;
    await fetchPage(`${any.url}${pagePath(dates, load.windowVisits - 1, 2)}`, await pageHeaders(any.url, credential), 1);
    let rows: Row[];
    try {
      rows = await measureRows(run, deepSkip);
    } catch (error) {
      reportOutput([cached, off]);
      throw error;
    }
    await new Promise((done) => setTimeout(done, IDLE_AFTER_SECONDS * 1000));
    const memory = [cached, off]
      .filter((s) => s !== undefined)
      .map((s) => ({ service: s.label, peakMB: kbToMB(procStatusKb(s.pid, 'VmHWM')), idleAfterRunsMB: kbToMB(procStatusKb(s.pid, 'VmRSS')) }));
    return { database: kind, load, deepSkip, memory, rows };
  } finally {
    // Stop this database's services and remove its data before the next database runs.
    await cleanUpTo(mark);
  }
}

async function main(): Promise<boolean> {
  const settings = readSettings();
  const startedAt = new Date();
  const machine = machineFacts();
  const dates = benchDates();
  ensureWrk(log);
  log(`node ${machine.node} on ${machine.platform}; ${machine.cpus} x ${machine.cpuModel}; ${machine.totalMemoryGB} GB memory`);
  log(
    `settings: ${settings.databases.map((d) => `${settings.visits[d]} visits on ${d}`).join(', ')}, ` +
      `${settings.durationSeconds} s per run (+${settings.warmupSeconds} s warm-up), ${settings.connections} connections, ` +
      `rows ${[...settings.only].join(',')}`,
  );
  log(`window: FromDate=${dates.from} ToDate=${dates.to} (today in ${SERVICE_TIMEZONE}: ${dates.today})`);

  const scratch = await mkdtemp(join(os.tmpdir(), 'visits-bench-'));
  defer(`remove ${scratch}`, () => rm(scratch, { recursive: true, force: true }));
  const databases: DatabaseResult[] = [];
  for (const kind of settings.databases) databases.push(await benchDatabase(kind, { settings, dates, scratch }));

  log('');
  log(`machine: node ${machine.node}, ${machine.cpus} CPUs (${machine.cpuModel}), ${machine.totalMemoryGB} GB memory`);
  log(
    `data set: visits of client ${CLIENT.id} over ${dates.firstDataDay}..${dates.lastDataDay}, ${BRANCH_COUNT} branches; ` +
      `window ${dates.from}..${dates.to}; wrk, ${settings.connections} connections, ${settings.durationSeconds} s per run` +
      (settings.only.has('token') ? `, ${settings.tokenDurationSeconds} s for the token run` : '') +
      ` (each after ${settings.warmupSeconds} s warm-up)`,
  );
  for (const db of databases) printDatabase(db);
  printLegend();

  const problems = databases.flatMap((db) => db.rows.flatMap((row) => row.problems));
  const stamp = startedAt.toISOString().replace(/[:.]/g, '-');
  const settingsJson = { ...settings, only: [...settings.only], pages: PAGES, feeds: FEEDS };
  const file = await writeResults(stamp, { startedAt: startedAt.toISOString(), settings: settingsJson, machine, dates, databases, problems });
  log(`\nresults: ${relative(process.cwd(), file)}`);
  if (problems.length > 0) {
    console.error(`\n!!!!!!!! ${problems.length} problem(s); these figures are not valid:`);
    for (const problem of problems) console.error(`!!!!!!!!   ${problem}`);
    return false;
  }
  return true;
}

// Ctrl-C or a kill: still stop the children and drop the schema.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  process.once(signal, () => {
    console.error(`\n${signal}: cleaning up`);
    stopLoad();
    void cleanUpTo(0).finally(() => process.exit(130));
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
