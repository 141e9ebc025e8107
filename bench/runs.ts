// The measured rows: each visits page (with the default page cache, and on a service with the
// cache off), the compressed pages, the change feed and the token endpoint, each against
// references measured in the same minutes.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { changedAt } from './data-set.js';
import { fetchPage, get, getToken, pageHeaders, pagePath, tokenRequest, walkFeed, type Credential, type Page } from './http.js';
import { postgresServerPids, type BenchService } from './processes.js';
import { alternate, startBareServer, startFrameworkFloor, type Measured, type Party, type Reference } from './references.js';
import { log, round, TOKEN_CONNECTIONS, type BenchDates, type Database, type Encoding, type FeedSpec, type PageSpec, type Settings } from './settings.js';
import type { Target } from './wrk.js';

/** Change feed pages walked beforehand; each request of a feed run asks for the next of them. */
const FEED_PAGES = 50;
/** The deep row with the cache off walks the last this many pages of the window. */
const DEEP_PAGES = 50;

export interface RunContext {
  kind: Database;
  settings: Settings;
  dates: BenchDates;
  scratch: string;
  credential: Credential;
  /** The service as configured by default; present when a selected row needs it. */
  cached?: BenchService;
  /** The service with VISITS_CACHE_MB=0; present when a selected row needs it. */
  off?: BenchService;
  /** Visits loaded, and in the request window. */
  count: number;
  windowCount: number;
}

export interface Row {
  /** The row's name, as BENCH_ONLY takes it. */
  name: string;
  label: string;
  /** The path of the references' answer (the first, when the service's requests differ). */
  path: string;
  /** How many different paths the service's requests cycle through. */
  distinctPaths: number;
  bodyBytes: number | null;
  contentEncoding?: string;
  bare: Measured | null;
  floor: Measured | null;
  /** Null when the row was not measured (see note). */
  service: Measured | null;
  /** The service's mean rate over the bare server's and the floor's. */
  ratio: number | null;
  floorRatio: number | null;
  note?: string;
  problems: string[];
}

const ratioOf = (service: Measured | null, reference: Measured | null): number | null =>
  service && reference ? round(service.mean.requestsPerSec / reference.mean.requestsPerSec, 3) : null;

/** Anything that makes a run's figures suspect, said loudly right away and again at the end. */
function problemsOf(measured: Measured | null, what: string): string[] {
  const found: string[] = [];
  measured?.runs.forEach((run, i) => {
    const which = `${what} (run ${i + 1})`;
    const { connect, read, write, timeout, status } = run.errors;
    if (run.requests === 0) found.push(`${which}: no response within the run; lengthen it`);
    if (status > 0) found.push(`${which}: ${status} responses with status >= 400`);
    if (connect + read + write + timeout > 0) found.push(`${which}: socket errors connect ${connect}, read ${read}, write ${write}, timeout ${timeout}`);
  });
  for (const line of found) console.error(`\n!!!!!!!! ${line} !!!!!!!!\n`);
  return found;
}

/** A row from what was measured: ratios and problems of every party. */
function row(fields: Omit<Row, 'ratio' | 'floorRatio' | 'problems'>, problems: string[] = []): Row {
  const what = `${fields.label}`;
  return {
    ...fields,
    ratio: ratioOf(fields.service, fields.bare),
    floorRatio: ratioOf(fields.service, fields.floor),
    problems: [
      ...problems,
      ...problemsOf(fields.bare, `${what}: bare`),
      ...problemsOf(fields.floor, `${what}: floor`),
      ...problemsOf(fields.service, `${what}: service`),
    ],
  };
}

/**
 * A service party. Before its measured run, one request of the same kind must be answered:
 * requests the warm-up left running (wrk stops without waiting for them; a slow page can take
 * seconds) would otherwise be counted against the run.
 */
function serviceParty(name: string, service: BenchService, target: Target, context: RunContext, extra: Partial<Party['options']> = {}): Party {
  const settle = async (): Promise<void> => {
    if (target.method === 'POST') await getToken(service.url, context.credential);
    else await get(`${service.url}${target.paths[0]}`, target.headers);
  };
  return { name, target, options: { settings: context.settings, scratch: context.scratch, servicePid: service.pid, databasePids: context.kind === 'postgres' ? postgresServerPids : undefined, settle, ...extra } };
}

function referenceParty(name: string, reference: Reference, target: Omit<Target, 'origin'>, context: RunContext): Party {
  return { name, target: { ...target, origin: reference.origin }, options: { settings: context.settings, scratch: context.scratch } };
}

async function writeBody(context: RunContext, name: string, page: Page): Promise<string> {
  const file = join(context.scratch, `${context.kind}-${name}.body`);
  await writeFile(file, page.bytes);
  return file;
}

/** The Skips the cache-off row walks: the window in steps of Take, or the deep row's last DEEP_PAGES pages. */
function offSkips(spec: PageSpec, skip: number, windowCount: number): number[] {
  if (spec.deep) return Array.from({ length: DEEP_PAGES }, (_, i) => skip - i * spec.take).filter((s) => s >= 0);
  return Array.from({ length: Math.floor((windowCount - spec.take) / spec.take) + 1 }, (_, i) => i * spec.take);
}

/**
 * A visits page: the bare server, the framework floor, the service repeating the page (the
 * default page cache) and the cache-off service walking other pages of the same size, in turn,
 * twice. Either service row may be left out (BENCH_ONLY).
 */
export async function benchPage(context: RunContext, spec: PageSpec, skip: number): Promise<Row[]> {
  const { settings, cached, off } = context;
  const withCache = settings.only.has(spec.name) ? cached : undefined;
  const withoutCache = settings.only.has(`${spec.name}-off`) ? off : undefined;
  const any = withCache ?? withoutCache;
  if (!any) return [];
  const path = pagePath(context.dates, skip, spec.take);
  const headers = await pageHeaders(any.url, context.credential);
  const page = await fetchPage(`${any.url}${path}`, headers, spec.take);
  const bodyFile = await writeBody(context, spec.name, page);
  const skips = offSkips(spec, skip, context.windowCount);
  const what = `[${context.kind}] ${spec.label}`;
  log(`${what} (Skip=${skip}): ${page.bytes.length} bytes; cache off walks ${skips.length} pages, Skip ${Math.min(...skips)}..${Math.max(...skips)}`);

  const bare = await startBareServer(bodyFile, page.contentType);
  const floor = await startFrameworkFloor(bodyFile, page.contentType, path.slice(0, path.indexOf('?')));
  const parties = [referenceParty('bare', bare, { paths: [path], headers }, context), referenceParty('floor', floor, { paths: [path], headers }, context)];
  if (withCache) parties.push(serviceParty('service', withCache, { origin: withCache.url, paths: [path], headers }, context));
  const offPaths = skips.map((s) => pagePath(context.dates, s, spec.take));
  if (withoutCache) parties.push(serviceParty('service, cache off', withoutCache, { origin: withoutCache.url, paths: offPaths, headers }, context));
  const measured = await alternate(what, parties);
  await bare.stop();
  await floor.stop();

  // The references stand for this exact answer: check every service still gives it.
  const changed: string[] = [];
  for (const service of [withCache, withoutCache]) {
    if (service && !(await fetchPage(`${service.url}${path}`, headers, spec.take)).bytes.equals(page.bytes)) {
      changed.push(`${what}: the ${service.label}'s page differs from the references' bytes after the run`);
    }
  }
  const common = { path, bodyBytes: page.bytes.length, bare: measured.get('bare')!, floor: measured.get('floor')! };
  const rows: Row[] = [];
  if (withCache) rows.push(row({ ...common, name: spec.name, label: spec.label, distinctPaths: 1, service: measured.get('service')! }, changed));
  if (withoutCache) {
    const fields = { ...common, name: `${spec.name}-off`, label: `${spec.label}, cache off`, distinctPaths: skips.length };
    rows.push(row({ ...fields, service: measured.get('service, cache off')! }, withCache ? [] : changed));
  }
  return rows;
}

/**
 * A page asked for with Accept-Encoding `encoding`, against the bare server sending the very
 * bytes the service compressed, with the same Content-Encoding. With `cacheOff`, the cache-off
 * service walks the window as the cache-off row of the page does (every request another page,
 * compressed as it is asked for), against the bare server sending the first page's compressed
 * bytes. A service that answers uncompressed gives a row "not compressed" and no run.
 */
export async function benchCompressed(context: RunContext, spec: PageSpec, skip: number, encoding: Encoding, cacheOff: boolean): Promise<Row | null> {
  const name = `${spec.name}-${encoding}${cacheOff ? '-off' : ''}`;
  const service = cacheOff ? context.off : context.cached;
  if (!context.settings.only.has(name) || !service) return null;
  const label = `${spec.label}, ${encoding}${cacheOff ? ', cache off' : ''}`;
  const path = pagePath(context.dates, skip, spec.take);
  const paths = cacheOff ? offSkips(spec, skip, context.windowCount).map((s) => pagePath(context.dates, s, spec.take)) : [path];
  const headers = { ...(await pageHeaders(service.url, context.credential)), 'accept-encoding': encoding };
  const page = await fetchPage(`${service.url}${path}`, headers, spec.take);
  const base = { name, label, path, distinctPaths: paths.length, contentEncoding: page.contentEncoding, bare: null, floor: null, service: null };
  if (page.contentEncoding === undefined) {
    log(`[${context.kind}] ${label}: the service answered without Content-Encoding; not compressed, not measured`);
    return row({ ...base, bodyBytes: null, note: 'not compressed' });
  }
  if (page.contentEncoding !== encoding) {
    return row({ ...base, bodyBytes: page.bytes.length, note: `answered ${page.contentEncoding}` }, [
      `[${context.kind}] ${label}: asked for ${encoding}, the service answered Content-Encoding ${page.contentEncoding}`,
    ]);
  }
  const what = `[${context.kind}] ${label}`;
  log(`${what}: ${page.bytes.length} bytes ${encoding}` + (cacheOff ? `; walks ${paths.length} pages` : ''));
  const bare = await startBareServer(await writeBody(context, name, page), page.contentType, encoding);
  const measured = await alternate(what, [
    referenceParty('bare', bare, { paths: [path], headers }, context),
    serviceParty('service', service, { origin: service.url, paths, headers }, context),
  ]);
  await bare.stop();
  const after = await fetchPage(`${service.url}${path}`, headers, spec.take);
  const changed = after.bytes.equals(page.bytes) ? [] : [`${what}: the service's compressed bytes changed during the run`];
  return row({ ...base, bodyBytes: page.bytes.length, bare: measured.get('bare')!, service: measured.get('service')! }, changed);
}

/**
 * A change feed run at `spec.at` of the loaded history: every request asks for another of
 * FEED_PAGES consecutive pages (their tokens collected beforehand by walking the feed); the
 * references serve the first of them. A feed page is never cached.
 */
export async function benchFeed(context: RunContext, spec: FeedSpec): Promise<Row | null> {
  const service = context.cached;
  if (!context.settings.only.has(spec.name) || !service) return null;
  const headers = await pageHeaders(service.url, context.credential);
  const since = new Date(changedAt(Math.floor(spec.at * context.count), context.count)).toISOString();
  const paths = await walkFeed(service.url, headers, since, spec.take, FEED_PAGES);
  const page = await fetchPage(`${service.url}${paths[0]}`, headers, spec.take);
  const bodyFile = await writeBody(context, spec.name, page);
  const what = `[${context.kind}] ${spec.label}`;
  log(`${what} (Since=${since}): ${paths.length} pages, the first ${page.bytes.length} bytes`);

  const bare = await startBareServer(bodyFile, page.contentType);
  const floor = await startFrameworkFloor(bodyFile, page.contentType, paths[0].slice(0, paths[0].indexOf('?')));
  const measured = await alternate(what, [
    referenceParty('bare', bare, { paths: [paths[0]], headers }, context),
    referenceParty('floor', floor, { paths: [paths[0]], headers }, context),
    serviceParty('service', service, { origin: service.url, paths, headers }, context),
  ]);
  await bare.stop();
  await floor.stop();
  return row({
    name: spec.name,
    label: spec.label,
    path: paths[0],
    distinctPaths: paths.length,
    bodyBytes: page.bytes.length,
    bare: measured.get('bare')!,
    floor: measured.get('floor')!,
    service: measured.get('service')!,
  });
}

/** POST /connect/token at TOKEN_CONNECTIONS, form body: a secret check and a signature per request; no reference. */
export async function benchToken(context: RunContext): Promise<Row | null> {
  const service = context.cached;
  if (!context.settings.only.has('token') || !service) return null;
  const { headers, body } = tokenRequest(context.credential);
  const target: Target = { origin: service.url, paths: ['/connect/token'], headers, method: 'POST', body };
  const what = `[${context.kind}] POST /connect/token`;
  const party = serviceParty('service', service, target, context, {
    connections: TOKEN_CONNECTIONS,
    durationSeconds: context.settings.tokenDurationSeconds,
  });
  // One run after its warm-up: there is no reference to alternate with.
  const measured = await alternate(what, [party], 1);
  const fields = { name: 'token', label: 'token', path: '/connect/token', distinctPaths: 1, bodyBytes: null, bare: null, floor: null };
  return row({ ...fields, service: measured.get('service')! });
}
