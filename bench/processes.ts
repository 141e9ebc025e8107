// The processes of a run (the service, the references) and the resources the bench makes:
// each registers its undo as it is made, and the undo actions run last first, also on
// failure or Ctrl-C. Also the resident set of a process, read from /proc.

import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { readdirSync, readFileSync } from 'node:fs';
import { startService, type ServiceProcess } from '../test/helpers/service-process-core.js';
import { MB, message, ROOT, round } from './settings.js';

const cleanups: { label: string; action: () => Promise<unknown> }[] = [];
const RSS_POLL_MS = 200;
const STOP_GRACE_MS = 5000;

export function defer(label: string, action: () => Promise<unknown>): void {
  cleanups.push({ label, action });
}

/** Where the undo list stands now: cleanUpTo(mark) undoes what was made after. */
export const cleanupMark = (): number => cleanups.length;

/** Runs the undo actions registered after `mark`; a failing one is reported, the rest still run. */
export async function cleanUpTo(mark: number): Promise<void> {
  while (cleanups.length > mark) {
    const { label, action } = cleanups.pop()!;
    try {
      await action();
    } catch (error) {
      console.error(`clean-up "${label}" failed: ${message(error)}`);
    }
  }
}

export interface Child {
  label: string;
  process: ChildProcess;
  /** The last few KB of its stdout and stderr: they explain a failure. */
  output: () => string;
}

/** A node process of the bench's own (a reference server), stopped at clean-up at the latest. */
export function startChild(label: string, args: string[]): Child {
  const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
  // Both pipes are drained (a full pipe would stall the child).
  let tail = '';
  const keep = (chunk: string): void => {
    tail = (tail + chunk).slice(-8000);
  };
  child.stdout.setEncoding('utf8').on('data', keep);
  child.stderr.setEncoding('utf8').on('data', keep);
  child.on('error', (error) => keep(`\n[spawn error] ${message(error)}\n`));
  defer(`stop ${label}`, () => stopChild(child));
  return { label, process: child, output: () => tail };
}

export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const force = setTimeout(() => child.kill('SIGKILL'), STOP_GRACE_MS);
  await exited;
  clearTimeout(force);
}

/** Polls `check` until it returns a value; fails when the child exits first or time runs out. */
export async function waitFor<T>(child: Child, timeoutMs: number, check: () => Promise<T | undefined>): Promise<T> {
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

export interface BenchService {
  label: string;
  /** http://127.0.0.1:port */
  url: string;
  pid: number;
  output: () => string;
  /** The exit code or signal once it has ended, null while it runs. */
  exit: () => number | string | null;
  stop: () => Promise<void>;
}

/**
 * The service as deployed, in the environment `env` (see serviceEnv); `cacheOff` sets
 * VISITS_CACHE_MB=0, otherwise the page cache keeps its default.
 */
export async function startBenchService(env: Record<string, string>, cacheOff: boolean): Promise<BenchService> {
  const label = cacheOff ? 'service (cache off)' : 'service';
  const service = await startService(
    {
      ...env,
      PORT: '0',
      HOST: '127.0.0.1',
      METRICS_PORT: '0',
      // As the image sets it (see Dockerfile): V8's heap kept near what is live.
      NODE_OPTIONS: '--max-semi-space-size=4 --max-old-space-size=256',
      SEED_DEMO: 'false',
      LOG_LEVEL: 'warn',
      // As deployed (see Dockerfile): the schema is current, migrations ran as a separate step.
      MIGRATIONS_RUN: 'false',
      NODE_ENV: 'production',
      // As the image sets it (see Dockerfile): large buffers are given back to the system when freed.
      MALLOC_MMAP_THRESHOLD_: '1048576',
      // The limits stay on (the guard's cost is part of the measurement) but far above the load.
      RATE_LIMIT_PER_MINUTE: '1000000',
      TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
      ...(cacheOff ? { VISITS_CACHE_MB: '0' } : {}),
    },
    // This checkout's dist/main.js, wherever the compiled helper lies; `env` is the whole
    // environment (see serviceEnv), so no VISITS_CACHE_MB or DATABASE_URL of the caller leaks in.
    // BENCH_SERVICE_NODE_ARGS: options of node for the service, such as `--cpu-prof --cpu-prof-dir=/tmp/profiles`.
    { cwd: ROOT, exactEnv: true, nodeArgs: env.BENCH_SERVICE_NODE_ARGS?.split(/\s+/).filter(Boolean) },
  );
  const stop = (): Promise<void> => stopService(service);
  defer(`stop ${label}`, stop);
  const url = service.url.replace('//localhost:', '//127.0.0.1:');
  const child = { label, process: service.child, output: service.output };
  await waitFor(child, 30_000, async () => ((await fetch(`${url}/health/ready`)).status === 200 ? true : undefined));
  return {
    label,
    url,
    pid: service.child.pid!,
    output: service.output,
    exit: () => service.child.exitCode ?? service.child.signalCode,
    stop,
  };
}

async function stopService(service: ServiceProcess): Promise<void> {
  const force = setTimeout(() => void service.stop('SIGKILL'), STOP_GRACE_MS);
  await service.stop();
  clearTimeout(force);
}

/** A field of /proc/<pid>/status in kB (VmRSS, VmHWM); null without /proc or once the process is gone. */
export function procStatusKb(pid: number, field: 'VmRSS' | 'VmHWM'): number | null {
  try {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) : null;
  } catch {
    return null;
  }
}

export const kbToMB = (kb: number | null): number | null => (kb === null ? null : round((kb * 1024) / MB, 1));

/** /proc's clock ticks (USER_HZ): 100 a second on Linux whatever the kernel's own rate. */
const TICK_MS = 10;

/** User and system CPU of a process so far, in ms (/proc/<pid>/stat); null without /proc or once it is gone. */
export function procCpuMs(pid: number): number | null {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The fields after the command name, which may itself hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * TICK_MS;
  } catch {
    return null;
  }
}

/** The processes of the PostgreSQL server on this machine (postmaster and backends): their command is postgres. */
export function postgresServerPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/comm`, 'utf8').trim() === 'postgres') pids.push(Number(entry));
    } catch {
      // Gone meanwhile.
    }
  }
  return pids;
}

/**
 * Counts the CPU the processes `pids()` lists spend from now until the returned function is
 * called, in ms: a process that started meanwhile counts from zero, one that ended is missed.
 */
export function watchCpu(pids: () => number[]): () => number {
  const start = new Map(pids().map((pid) => [pid, procCpuMs(pid)]));
  return () => pids().reduce((total, pid) => total + (procCpuMs(pid) ?? 0) - (start.get(pid) ?? 0), 0);
}

/** Samples the resident set of `pid` until the returned stop function is called; gives the peak in MB. */
export function watchRss(pid: number): () => number | null {
  let peak: number | null = null;
  const sample = (): void => {
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
