// The references the service is compared with, each serving the very bytes of the service's
// answer from memory: a bare node:http server (the ceiling) and a one-route NestJS app (the
// framework floor). And the A B A B order in which references and service are measured.

import { join } from 'node:path';
import { freePort } from '../test/helpers/listen.js';
import { get } from './http.js';
import { startChild, stopChild } from './processes.js';
import { log, round } from './settings.js';
import { measure, type MeasureOptions, type Target, type WrkRun } from './wrk.js';

const BARE_SERVER = join(import.meta.dirname, 'bare-server.js');
const FRAMEWORK_FLOOR = join(import.meta.dirname, 'framework-floor.js');
const READY_TIMEOUT_MS = 60_000;
/** Measured runs of each party: reference and service alternate, so drift of the machine shows. */
export const ROUNDS = 2;

export interface Reference {
  origin: string;
  stop: () => Promise<void>;
}

/** The bytes of `bodyFile` with these headers, to any request. */
export async function startBareServer(bodyFile: string, contentType: string, contentEncoding?: string): Promise<Reference> {
  const port = await freePort();
  const args = [BARE_SERVER, String(port), bodyFile, contentType, ...(contentEncoding ? [contentEncoding] : [])];
  return startReference('bare server', args, port, '/');
}

/** The bytes of `bodyFile` from one GET route at `routePath` (a path without query). */
export async function startFrameworkFloor(bodyFile: string, contentType: string, routePath: string): Promise<Reference> {
  const port = await freePort();
  return startReference('framework floor', [FRAMEWORK_FLOOR, String(port), bodyFile, contentType, routePath], port, routePath);
}

/** Starts a reference and waits until `path` answers 200. */
async function startReference(label: string, args: string[], port: number, path: string): Promise<Reference> {
  const child = startChild(label, args);
  const origin = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + READY_TIMEOUT_MS;
  for (;;) {
    const exit = child.process.exitCode ?? child.process.signalCode;
    if (exit !== null) throw new Error(`${label} exited (${exit}) while starting:\n${child.output()}`);
    const status = await get(`${origin}${path}`, {}).then(
      (response) => response.status,
      () => 0,
    );
    if (status === 200) return { origin, stop: () => stopChild(child.process) };
    if (Date.now() > deadline) throw new Error(`${label} not ready after ${READY_TIMEOUT_MS} ms:\n${child.output()}`);
    await new Promise((done) => setTimeout(done, 200));
  }
}

/** Who is measured: a reference or the service, with its own measuring options (connections, RSS). */
export interface Party {
  name: string;
  target: Target;
  options: MeasureOptions;
}

/** Both measured runs of a party, and their mean. */
export interface Measured {
  runs: WrkRun[];
  mean: WrkRun;
}

/**
 * Measures the parties in turn, `rounds` times over (A B A B), each run after its own warm-up.
 * `what` names the row in the progress lines.
 */
export async function alternate(what: string, parties: Party[], rounds = ROUNDS): Promise<Map<string, Measured>> {
  const runs = new Map<string, WrkRun[]>(parties.map((p) => [p.name, []]));
  for (let pass = 1; pass <= rounds; pass++) {
    for (const party of parties) {
      const run = await measure(party.target, party.options);
      runs.get(party.name)!.push(run);
      log(`${what}: ${party.name} ${pass}/${rounds}: ${run.requestsPerSec} req/s, p99 ${run.latencyMs.p99} ms`);
    }
  }
  return new Map([...runs].map(([name, list]) => [name, { runs: list, mean: meanRun(list) }]));
}

/** The mean of the figures measured; null when none was. */
function meanOf(values: (number | null)[]): number | null {
  const known = values.filter((v): v is number => v !== null);
  return known.length === 0 ? null : round(known.reduce((sum, v) => sum + v, 0) / known.length, 2);
}

/** Rates and percentiles averaged; the maximum latency and RSS are the highest, counts summed. */
export function meanRun(runs: WrkRun[]): WrkRun {
  const mean = (pick: (run: WrkRun) => number): number => round(runs.reduce((sum, run) => sum + pick(run), 0) / runs.length, 2);
  const sum = (pick: (run: WrkRun) => number): number => runs.reduce((total, run) => total + pick(run), 0);
  const rss = runs.map((run) => run.peakRssMB).filter((mb): mb is number => mb !== null);
  return {
    durationSeconds: sum((r) => r.durationSeconds),
    requests: sum((r) => r.requests),
    requestsPerSec: round(mean((r) => r.requestsPerSec), 1),
    latencyMs: {
      p50: mean((r) => r.latencyMs.p50),
      p90: mean((r) => r.latencyMs.p90),
      p99: mean((r) => r.latencyMs.p99),
      max: Math.max(...runs.map((r) => r.latencyMs.max)),
    },
    throughputMBps: mean((r) => r.throughputMBps),
    errors: {
      connect: sum((r) => r.errors.connect),
      read: sum((r) => r.errors.read),
      write: sum((r) => r.errors.write),
      timeout: sum((r) => r.errors.timeout),
      status: sum((r) => r.errors.status),
    },
    peakRssMB: rss.length > 0 ? Math.max(...rss) : null,
    cpuMsPerRequest: { service: meanOf(runs.map((r) => r.cpuMsPerRequest.service)), database: meanOf(runs.map((r) => r.cpuMsPerRequest.database)) },
  };
}
