// The load generator: wrk (C, epoll), which does not parse bodies in JavaScript on the cores it
// measures, so it is never what limits a run. A Lua script generated per target gives each
// request its own path where requests must differ, and prints the figures as one JSON line.

import { execFile, spawnSync, type ChildProcess } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { watchCpu, watchRss } from './processes.js';
import { MB, REQUEST_TIMEOUT_SECONDS, round, WRK_THREADS, type Settings } from './settings.js';

const execFileAsync = promisify(execFile);
const WRK = 'wrk';
/** Marks the line the script's done() prints among wrk's own output. */
const RESULT_MARK = 'BENCH-WRK-RESULT ';
/** wrk processes under way: a Ctrl-C or kill of the bench stops them too. */
const running = new Set<ChildProcess>();

export function stopLoad(): void {
  for (const child of running) child.kill('SIGTERM');
}

/** What to load: one path (the same request again and again) or several (each request the next). */
export interface Target {
  /** http://host:port */
  origin: string;
  paths: string[];
  headers: Record<string, string>;
  method?: 'GET' | 'POST';
  body?: string;
}

export interface WrkRun {
  durationSeconds: number;
  requests: number;
  requestsPerSec: number;
  /** wrk's percentiles (with its correction for coordinated omission), in ms. */
  latencyMs: { p50: number; p90: number; p99: number; max: number };
  throughputMBps: number;
  /** Socket errors by kind, and responses with a status of 400 or more (wrk's `status`). */
  errors: { connect: number; read: number; write: number; timeout: number; status: number };
  /** The service's peak resident set during the run (sampled VmRSS); null for a reference. */
  peakRssMB: number | null;
  /**
   * CPU (user and system) per request during the run, in ms: of the service process, and of
   * the database server's processes when it runs on this machine (PostgreSQL); null when not
   * measured (references, SQLite's database, which is the service's own process).
   */
  cpuMsPerRequest: { service: number | null; database: number | null };
}

interface ScriptResult {
  requests: number;
  durationUs: number;
  bytes: number;
  p50: number;
  p90: number;
  p99: number;
  max: number;
  connect: number;
  read: number;
  write: number;
  timeout: number;
  status: number;
}

/**
 * Makes sure wrk is installed: the Debian package, through apt-get (with sudo unless root).
 * Fails with what to do when that is not possible.
 */
export function ensureWrk(log: (line: string) => void): void {
  if (spawnSync(WRK, ['--version']).error === undefined) return;
  log('wrk is not installed: installing the Debian package (apt-get install -y wrk)');
  const sudo = process.getuid?.() === 0 ? [] : ['sudo'];
  for (const args of [['apt-get', 'update'], ['apt-get', 'install', '-y', 'wrk']]) {
    const command = [...sudo, ...args];
    const result = spawnSync(command[0], command.slice(1), { stdio: 'inherit' });
    if (result.error !== undefined || result.status !== 0) {
      throw new Error(
        `could not install wrk ('${command.join(' ')}' ${result.error ? `failed: ${result.error.message}` : `exited with ${result.status}`}); ` +
          'install it (Debian/Ubuntu: apt-get install wrk) and run again',
      );
    }
  }
  if (spawnSync(WRK, ['--version']).error !== undefined) throw new Error('wrk is still not on the PATH after apt-get install wrk');
}

/** A Lua string literal of a path or body (ASCII only: paths are percent-encoded, bodies form-encoded). */
function luaString(text: string): string {
  if (!/^[\x20-\x7e]*$/.test(text)) throw new Error(`not printable ASCII: ${text.slice(0, 80)}`);
  return `"${text.replace(/[\\"]/g, '\\$&')}"`;
}

/**
 * The wrk script of a target. With several paths, thread t (of WRK_THREADS) sends paths t,
 * t+THREADS, ... in turn: requests in flight at the same moment ask for different pages, so
 * neither a cache nor the single render of concurrent equal requests can help. The requests
 * are formatted once, in init(). done() prints the figures as one JSON line (latencies in µs).
 */
export function wrkScript(target: Target): string {
  const lines = [`wrk.method = ${luaString(target.method ?? 'GET')}`];
  if (target.body !== undefined) lines.push(`wrk.body = ${luaString(target.body)}`);
  if (target.paths.length > 1) {
    lines.push(
      `local paths = {\n${target.paths.map((path) => `  ${luaString(path)},`).join('\n')}\n}`,
      'local threads = 0',
      'function setup(thread)',
      '  thread:set("first", threads)',
      '  threads = threads + 1',
      'end',
      'local formatted = {}',
      'local position = 0',
      'function init(args)',
      '  for i, path in ipairs(paths) do formatted[i] = wrk.format(nil, path) end',
      '  position = first',
      'end',
      'function request()',
      '  local next_request = formatted[position % #formatted + 1]',
      `  position = position + ${WRK_THREADS}`,
      '  return next_request',
      'end',
    );
  }
  lines.push(
    'function done(summary, latency, requests)',
    '  local e = summary.errors',
    '  io.write(string.format(',
    `    '\\n${RESULT_MARK}{"requests":%d,"durationUs":%d,"bytes":%d,"p50":%d,"p90":%d,"p99":%d,"max":%d,' ..`,
    `    '"connect":%d,"read":%d,"write":%d,"timeout":%d,"status":%d}\\n',`,
    '    summary.requests, summary.duration, summary.bytes,',
    '    latency:percentile(50), latency:percentile(90), latency:percentile(99), latency.max,',
    '    e.connect, e.read, e.write, e.timeout, e.status))',
    'end',
  );
  return `${lines.join('\n')}\n`;
}

/** One wrk run of `seconds` against the target, its script written to `scriptFile`. */
export async function runWrk(target: Target, connections: number, seconds: number, scriptFile: string): Promise<WrkRun> {
  await writeFile(scriptFile, wrkScript(target));
  const args = [
    `--threads=${WRK_THREADS}`,
    `--connections=${connections}`,
    `--duration=${seconds}s`,
    `--timeout=${REQUEST_TIMEOUT_SECONDS}s`,
    '--latency',
    `--script=${scriptFile}`,
    ...Object.entries(target.headers).flatMap(([name, value]) => ['-H', `${name}: ${value}`]),
    `${target.origin}${target.paths[0]}`,
  ];
  let stdout: string;
  try {
    const run = execFileAsync(WRK, args, { maxBuffer: 4 * MB });
    running.add(run.child);
    ({ stdout } = await run.finally(() => running.delete(run.child)));
  } catch (error) {
    throw new Error(`wrk ${args.join(' ')} failed: ${(error as { stderr?: string }).stderr?.trim() ?? String(error)}`, { cause: error });
  }
  const line = stdout.split('\n').find((text) => text.startsWith(RESULT_MARK));
  if (!line) throw new Error(`wrk printed no result line:\n${stdout}`);
  return fromScript(JSON.parse(line.slice(RESULT_MARK.length)) as ScriptResult);
}

function fromScript(r: ScriptResult): WrkRun {
  const seconds = r.durationUs / 1e6;
  const ms = (us: number): number => round(us / 1000, 2);
  return {
    durationSeconds: round(seconds, 2),
    requests: r.requests,
    requestsPerSec: round(r.requests / seconds, 1),
    latencyMs: { p50: ms(r.p50), p90: ms(r.p90), p99: ms(r.p99), max: ms(r.max) },
    throughputMBps: round(r.bytes / seconds / MB, 2),
    errors: { connect: r.connect, read: r.read, write: r.write, timeout: r.timeout, status: r.status },
    peakRssMB: null,
    cpuMsPerRequest: { service: null, database: null },
  };
}

export interface MeasureOptions {
  settings: Settings;
  /** Where the run's wrk script is written. */
  scratch: string;
  connections?: number;
  durationSeconds?: number;
  /** The service's pid, whose resident set is sampled and whose CPU is counted during the measured run. */
  servicePid?: number;
  /** The database server's processes, whose CPU is counted during the measured run. */
  databasePids?: () => number[];
  /** Resolves once what the warm-up left running has drained (see settle in runs.ts). */
  settle?: () => Promise<void>;
}

/** A warm-up run (discarded: JIT, pools and caches warm up), then the measured run with identical settings. */
export async function measure(target: Target, options: MeasureOptions): Promise<WrkRun> {
  const { settings, scratch, servicePid, settle } = options;
  const connections = options.connections ?? settings.connections;
  const script = join(scratch, 'wrk-script.lua');
  await runWrk(target, connections, settings.warmupSeconds, script);
  if (settle) await settle();
  const stopRss = servicePid === undefined ? null : watchRss(servicePid);
  const serviceCpu = servicePid === undefined ? null : watchCpu(() => [servicePid]);
  const databaseCpu = options.databasePids ? watchCpu(options.databasePids) : null;
  const run = await runWrk(target, connections, options.durationSeconds ?? settings.durationSeconds, script);
  const perRequest = (ms: number | null): number | null => (ms === null || run.requests === 0 ? null : round(ms / run.requests, 2));
  return {
    ...run,
    peakRssMB: stopRss ? stopRss() : null,
    cpuMsPerRequest: { service: perRequest(serviceCpu ? serviceCpu() : null), database: perRequest(databaseCpu ? databaseCpu() : null) },
  };
}
