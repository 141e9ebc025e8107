// What a run prints and keeps: per database a rate table (bare server first, then the framework
// floor, then the service, each with both of its runs) and a latency table, and the JSON of
// every figure under bench/results/.

import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import type { Measured } from './references.js';
import type { Row } from './runs.js';
import { log, RESULTS_DIR, round, type Database } from './settings.js';

export interface DatabaseResult {
  database: Database;
  load: {
    visits: number;
    visitsPerDay: number;
    windowVisits: number;
    seconds: number;
    visitsPerSec: number;
    analyzeSeconds: number | null;
  };
  deepSkip: number;
  /** Per service (default, cache off): peak resident set over its life (VmHWM), and VmRSS once idle after the runs. */
  memory: { service: string; peakMB: number | null; idleAfterRunsMB: number | null }[];
  rows: Row[];
}

type Cell = string | number | null | undefined;

/** Plain-text table: text columns left-aligned, numbers right-aligned. */
export function formatTable(header: string[], rows: Cell[][]): string {
  const cells = [header, ...rows].map((row) => row.map((cell) => (cell === null || cell === undefined ? '-' : String(cell))));
  const widths = header.map((_, c) => Math.max(...cells.map((row) => row[c].length)));
  const numeric = header.map((_, c) => c > 0 && rows.every((row) => typeof row[c] !== 'string' || /^[\d./ ]+$/.test(row[c])));
  const line = (row: string[]): string => row.map((cell, c) => (numeric[c] ? cell.padStart(widths[c]) : cell.padEnd(widths[c]))).join('  ');
  return [line(cells[0]), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

const rate = (m: Measured | null): number | null => m?.mean.requestsPerSec ?? null;
/** Both measured runs' rates, in the order they ran. */
const runs = (m: Measured | null): string | null => (m && m.runs.length > 1 ? m.runs.map((r) => Math.round(r.requestsPerSec)).join(' / ') : null);

/** Requests per second: the ceiling first, then the floor, then the service, and the ratios. */
function ratesTable(db: DatabaseResult): string {
  const header = [db.database, 'body KB', 'paths', 'bare req/s', 'bare runs', 'floor req/s', 'floor runs', 'svc req/s', 'svc runs', 'svc/bare', 'svc/floor'];
  const rows = db.rows.map((r) => [
    r.label,
    r.bodyBytes === null ? null : round(r.bodyBytes / 1000, 1),
    r.distinctPaths,
    rate(r.bare),
    runs(r.bare),
    rate(r.floor),
    runs(r.floor),
    r.note ?? rate(r.service),
    runs(r.service),
    r.ratio,
    r.floorRatio,
  ]);
  return formatTable(header, rows);
}

/** The service's latency (means of both runs; max the highest), memory and failures, beside the references' p99. */
function latencyTable(db: DatabaseResult): string {
  const header = [db.database, 'svc p50', 'svc p90', 'svc p99', 'svc max', 'RSS MB', 'svc CPU', 'db CPU', '>=400', 'sock err', 'bare p99', 'floor p99'];
  const rows = db.rows.map((r) => {
    const s = r.service?.mean;
    const socket = s ? s.errors.connect + s.errors.read + s.errors.write + s.errors.timeout : null;
    return [
      r.label,
      s?.latencyMs.p50,
      s?.latencyMs.p90,
      s?.latencyMs.p99,
      s?.latencyMs.max,
      s?.peakRssMB,
      s?.cpuMsPerRequest.service,
      s?.cpuMsPerRequest.database,
      s?.errors.status,
      socket,
      r.bare?.mean.latencyMs.p99,
      r.floor?.mean.latencyMs.p99,
    ];
  });
  return formatTable(header, rows);
}

/** The deep page's latency against the first page's, with and without the cache, when both were measured. */
function deepVsFirst(db: DatabaseResult): string[] {
  const lines: string[] = [];
  for (const suffix of ['', '-off']) {
    const first = db.rows.find((r) => r.name === `first${suffix}`)?.service?.mean;
    const deep = db.rows.find((r) => r.name === `deep${suffix}`)?.service?.mean;
    if (!first || !deep) continue;
    const ratio = first.latencyMs.p99 > 0 ? round(deep.latencyMs.p99 / first.latencyMs.p99, 2) : '-';
    lines.push(
      `${db.database}: deep page (Skip=${db.deepSkip}${suffix ? ' and the pages before it, cache off' : ''}) ` +
        `p50/p99 ${deep.latencyMs.p50}/${deep.latencyMs.p99} ms vs first page${suffix ? 's' : ''} ` +
        `${first.latencyMs.p50}/${first.latencyMs.p99} ms; deep p99 / first p99 = ${ratio}`,
    );
  }
  return lines;
}

export function printDatabase(db: DatabaseResult): void {
  const { load } = db;
  log('');
  log(
    `${db.database}: ${load.visits} visits (${load.visitsPerDay}/day, ${load.windowVisits} in the window), ` +
      `loaded in ${load.seconds} s (${load.visitsPerSec} visits/s)` +
      (load.analyzeSeconds === null ? '' : ` + VACUUM (ANALYZE) ${load.analyzeSeconds} s`),
  );
  for (const m of db.memory) {
    log(`${db.database}: ${m.service}: peak RSS (VmHWM, start-up and runs) ${m.peakMB ?? '-'} MB; idle after the runs ${m.idleAfterRunsMB ?? '-'} MB`);
  }
  for (const line of deepVsFirst(db)) log(line);
  log('');
  log(ratesTable(db));
  log('');
  log(latencyTable(db));
}

export function printLegend(): void {
  log('');
  log(
    '(req/s: mean of the two measured runs, listed under "runs": every party of a page ran once, then ' +
      'each again in the same order (A B A B), so drift of the machine shows; paths: distinct request paths the service cycles through, the references answer the first path\'s bytes; ' +
      'bare = node:http, floor = one-route NestJS/Express app, both serving the same bytes from memory; ' +
      'compressed rows: the bare server sends the bytes the service compressed, with the same Content-Encoding; ' +
      'compressed cache-off rows: those of the first page of the window the service walks)',
  );
  log(
    '(latency in ms as wrk reports it (corrected for coordinated omission), the mean of both runs, max the highest; ' +
      'RSS = peak service VmRSS sampled during the measured runs; svc CPU, db CPU = ms of CPU per request of the service process and of the PostgreSQL server processes (on this machine) during the measured runs; >=400 = responses with such a status, sock err = ' +
      'connect, read, write errors and timeouts (30 s); MB = 10^6 bytes; token: one run, no reference)',
  );
  log(
    '(rows without "cache off": the default configuration, where the repeated page comes from the page cache; ' +
      '"cache off": VISITS_CACHE_MB=0 and every request for another page, read from the database and rendered)',
  );
}

export async function writeResults(stamp: string, report: object): Promise<string> {
  await mkdir(RESULTS_DIR, { recursive: true });
  const file = join(RESULTS_DIR, `visits-${stamp}.json`);
  await writeFile(file, `${JSON.stringify(report, null, 2)}\n`);
  return file;
}
