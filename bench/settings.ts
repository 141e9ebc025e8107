// Settings of a bench run (read from the environment, see visits.ts), the facts of the data
// set every module agrees on, and small helpers.

import { existsSync } from 'node:fs';
import os from 'node:os';
import { dirname, join } from 'node:path';

/** The checkout's root (the nearest folder with a package.json): the bench runs compiled, from another folder. */
export const ROOT = projectRoot(import.meta.dirname);
export const RESULTS_DIR = join(ROOT, 'bench', 'results');

export const CLIENT = { id: 1001, name: 'Acme Dining Group' };
export const BRAND = { id: 5, name: 'Acme Grill' };
/** Days of visits, ending yesterday: any 31-day window before today is full. */
export const DATA_DAYS = 60;
/** The longest range the endpoint accepts (VISITS_MAX_RANGE_DAYS), both ends included. */
export const WINDOW_DAYS = 31;
/** The service judges "today" in this zone (RESULTS_TIMEZONE default); ToDate must be before it. */
export const SERVICE_TIMEZONE = 'Europe/London';
/** A response not complete after this many seconds counts as a timeout (wrk --timeout). */
export const REQUEST_TIMEOUT_SECONDS = 30;
/** Load generator threads: one per core of the 2-core machine the figures are read on. */
export const WRK_THREADS = 2;
/** Connections of the token run: partners fetch a token an hour, so fewer of them at once than pages. */
export const TOKEN_CONNECTIONS = 32;
/**
 * Seconds between the last run on a service and the reading of its idle resident set: V8 gives
 * back the garbage of a run when its memory reducer finds the process idle, some 8 s after
 * the load stops (read at 5 s, the idle figure was the run's garbage, not what stays).
 */
export const IDLE_AFTER_SECONDS = 20;

export const DAY = 86_400_000;
export const MINUTE = 60_000;
export const MB = 1_000_000;

export interface PageSpec {
  name: 'first' | 'deep' | 'take1000';
  label: string;
  take: number;
  deep: boolean;
  /** Also measured with Accept-Encoding gzip and br. */
  compressed: boolean;
}

/** The measured pages, in table order; the deep page's Skip is set per data set. */
export const PAGES: PageSpec[] = [
  { name: 'first', label: 'Take=100 first page', take: 100, deep: false, compressed: true },
  { name: 'deep', label: 'Take=100 deep page', take: 100, deep: true, compressed: false },
  { name: 'take1000', label: 'Take=1000', take: 1000, deep: false, compressed: true },
];

export interface FeedSpec {
  name: 'feed-start' | 'feed-deep';
  label: string;
  take: number;
  /** Where in the loaded history the feed starts, 0..1. */
  at: number;
}

/** Change feed pages: Take=500 from the start of the history, and from 95% of it. */
export const FEEDS: FeedSpec[] = [
  { name: 'feed-start', label: 'feed Take=500 from the start', take: 500, at: 0 },
  { name: 'feed-deep', label: 'feed Take=500 deep', take: 500, at: 0.95 },
];

export const ENCODINGS = ['gzip', 'br'] as const;
export type Encoding = (typeof ENCODINGS)[number];

/** Every row BENCH_ONLY can name, in table order. */
export const ROW_NAMES: string[] = [
  ...PAGES.map((p) => p.name),
  ...PAGES.map((p) => `${p.name}-off`),
  ...PAGES.filter((p) => p.compressed).flatMap((p) => ENCODINGS.map((e) => `${p.name}-${e}`)),
  ...PAGES.filter((p) => p.compressed).flatMap((p) => ENCODINGS.map((e) => `${p.name}-${e}-off`)),
  ...FEEDS.map((f) => f.name),
  'token',
];

export type Database = 'sqlite' | 'postgres';

export interface Settings {
  visits: Record<Database, number>;
  durationSeconds: number;
  warmupSeconds: number;
  tokenDurationSeconds: number;
  connections: number;
  databases: Database[];
  postgresUrl: string;
  /** The rows to run (BENCH_ONLY), all by default. */
  only: Set<string>;
}

export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const positive = (name: string, fallback: number): number => {
    const raw = env[name]?.trim();
    if (!raw) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < 1) throw new Error(`${name} must be a positive integer: '${raw}'`);
    return Number(raw);
  };
  const databases = listOf(env.BENCH_DATABASES, 'sqlite,postgres');
  for (const name of databases) {
    if (name !== 'sqlite' && name !== 'postgres') throw new Error(`BENCH_DATABASES: unknown database '${name}'`);
  }
  const override = env.BENCH_VISITS?.trim() ? positive('BENCH_VISITS', 0) : undefined;
  const durationSeconds = positive('BENCH_DURATION', 10);
  return {
    visits: {
      sqlite: override ?? positive('BENCH_SQLITE_VISITS', 200_000),
      postgres: override ?? positive('BENCH_POSTGRES_VISITS', 1_000_000),
    },
    durationSeconds,
    warmupSeconds: positive('BENCH_WARMUP', 5),
    tokenDurationSeconds: positive('BENCH_TOKEN_DURATION', durationSeconds),
    connections: Math.max(WRK_THREADS, positive('BENCH_CONNECTIONS', 50)),
    databases: databases as Database[],
    postgresUrl: env.BENCH_POSTGRES_URL?.trim() || 'postgres://postgres@127.0.0.1:5432/test',
    only: onlyRows(env.BENCH_ONLY),
  };
}

/**
 * The rows BENCH_ONLY selects: a name selects that row and the rows named after it with a
 * suffix ('first' is first, first-off, first-gzip, first-br, first-gzip-off and first-br-off;
 * 'first-gzip' is first-gzip and first-gzip-off; 'feed' both feeds).
 */
function onlyRows(raw: string | undefined): Set<string> {
  const names = listOf(raw, ROW_NAMES.join(','));
  const rows = new Set<string>();
  for (const name of names) {
    const matching = ROW_NAMES.filter((row) => row === name || row.startsWith(`${name}-`));
    if (matching.length === 0) throw new Error(`BENCH_ONLY: unknown row '${name}'; rows: ${ROW_NAMES.join(', ')}`);
    for (const row of matching) rows.add(row);
  }
  return rows;
}

function listOf(raw: string | undefined, fallback: string): string[] {
  return (raw?.trim() || fallback)
    .split(',')
    .map((name) => name.trim())
    .filter(Boolean);
}

function projectRoot(from: string): string {
  for (let dir = from; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${from}`);
  }
}

export interface MachineFacts {
  node: string;
  platform: string;
  cpus: number;
  cpuModel: string;
  totalMemoryGB: number;
}

export function machineFacts(): MachineFacts {
  const cpus = os.cpus();
  return {
    node: process.version,
    platform: `${os.platform()} ${os.release()} ${os.arch()}`,
    cpus: cpus.length,
    cpuModel: cpus[0]?.model.trim() ?? 'unknown',
    totalMemoryGB: round(os.totalmem() / 1024 ** 3, 1),
  };
}

export interface BenchDates {
  today: string;
  firstDataDay: string;
  lastDataDay: string;
  /** The request window: FromDate..ToDate. */
  from: string;
  to: string;
}

/** Today's date where the service judges it, and the data and request windows around it. */
export function benchDates(): BenchDates {
  const parts = new Intl.DateTimeFormat('en-CA', {
    timeZone: SERVICE_TIMEZONE,
    year: 'numeric',
    month: '2-digit',
    day: '2-digit',
  }).formatToParts(new Date());
  const get = (type: string): string | undefined => parts.find((p) => p.type === type)?.value;
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

function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * DAY).toISOString().slice(0, 10);
}

export function round(value: number, decimals: number): number {
  const factor = 10 ** decimals;
  return Math.round(value * factor) / factor;
}

export const log = (line: string): void => console.log(line);

export const message = (error: unknown): string => (error instanceof Error ? error.message : String(error));

/** The error with its causes (fetch hides the real reason, such as ECONNRESET, in `cause`). */
export function describeError(error: unknown): string {
  let text = error instanceof Error ? (error.stack ?? error.message) : String(error);
  for (let cause = (error as { cause?: unknown } | null)?.cause; cause; cause = (cause as { cause?: unknown }).cause) {
    text += `\n  caused by: ${message(cause)}`;
  }
  return text;
}
