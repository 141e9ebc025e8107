// Single requests to the service: a token, a page as wrk gets it (raw bytes, no decoding), and
// the change feed walked page by page.

import { request } from 'node:http';
import { CLIENT, type BenchDates } from './settings.js';

/** What `cli credentials add --json` prints: the secrets of a partner credential. */
export interface Credential {
  apiKey: string;
  clientId: string;
  clientSecret: string;
}

export interface Response {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** The body as sent: not decompressed (fetch would decode gzip and br). */
  bytes: Buffer;
}

/** GET with node:http, which sends only the headers given (fetch adds an Accept-Encoding of its own). */
export function get(url: string, headers: Record<string, string>): Promise<Response> {
  return new Promise((done, fail) => {
    const req = request(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => done({ status: res.statusCode ?? 0, headers: res.headers, bytes: Buffer.concat(chunks) }));
      res.on('error', fail);
    });
    req.on('error', fail);
    req.end();
  });
}

/** The path of a page of the bench client's window. */
export function pagePath(dates: BenchDates, skip: number, take: number): string {
  const query = new URLSearchParams({
    SvcClientId: String(CLIENT.id),
    FromDate: dates.from,
    ToDate: dates.to,
    Skip: String(skip),
    Take: String(take),
  });
  return `/visits/standard?${query.toString()}`;
}

/** A client_credentials token request (client_secret_post): headers and form body. */
export function tokenRequest(credential: Credential): { headers: Record<string, string>; body: string } {
  return {
    headers: { 'svc-api-key': credential.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'client_credentials',
      client_id: credential.clientId,
      client_secret: credential.clientSecret,
    }).toString(),
  };
}

export async function getToken(url: string, credential: Credential): Promise<string> {
  const response = await fetch(`${url}/connect/token`, { method: 'POST', ...tokenRequest(credential) });
  const body = await response.text();
  if (response.status !== 200) throw new Error(`POST /connect/token answered ${response.status}: ${body}`);
  return (JSON.parse(body) as { access_token: string }).access_token;
}

/** The headers of a page request, with a fresh token: a long BENCH_DURATION must not outlive one (an hour). */
export async function pageHeaders(url: string, credential: Credential): Promise<Record<string, string>> {
  return { 'svc-api-key': credential.apiKey, authorization: `Bearer ${await getToken(url, credential)}` };
}

export interface Page {
  bytes: Buffer;
  contentType: string;
  /** Content-Encoding, when the service compressed the page. */
  contentEncoding: string | undefined;
  headers: Record<string, string | string[] | undefined>;
}

/**
 * Fetches one page and checks it: 200, and (when it is not compressed) exactly `expected`
 * visits. `headers` may ask for a compressed answer (Accept-Encoding).
 */
export async function fetchPage(url: string, headers: Record<string, string>, expected: number): Promise<Page> {
  const response = await get(url, headers);
  if (response.status !== 200) {
    throw new Error(`GET ${url} answered ${response.status}: ${response.bytes.toString('utf8').slice(0, 500)}`);
  }
  const contentEncoding = response.headers['content-encoding'] as string | undefined;
  if (contentEncoding === undefined) {
    const visits = (JSON.parse(response.bytes.toString('utf8')) as { data?: { visits?: unknown[] } }).data?.visits;
    if (visits?.length !== expected) throw new Error(`GET ${url} gave ${visits?.length} visits, expected ${expected}`);
  }
  return { bytes: response.bytes, contentType: String(response.headers['content-type']), contentEncoding, headers: response.headers };
}

/**
 * The paths of up to `pages` consecutive full change feed pages of Take=`take`, starting after
 * the first page a call with Since=`since` gives: each holds the previous page's `after`
 * token. Stops early at the end of the history (a page that is not full).
 */
export async function walkFeed(url: string, headers: Record<string, string>, since: string, take: number, pages: number): Promise<string[]> {
  const base = `/visits/standard/changes?SvcClientId=${CLIENT.id}&Take=${take}`;
  const paths: string[] = [];
  let after = (await feedPage(url, `${base}&Since=${encodeURIComponent(since)}`, headers)).after;
  while (paths.length < pages) {
    const path = `${base}&after=${encodeURIComponent(after)}`;
    const page = await feedPage(url, path, headers);
    if (page.visits < take) break;
    paths.push(path);
    after = page.after;
  }
  if (paths.length === 0) throw new Error(`the change feed from ${since} has no full page after the first`);
  return paths;
}

async function feedPage(url: string, path: string, headers: Record<string, string>): Promise<{ visits: number; after: string }> {
  const response = await get(`${url}${path}`, headers);
  const text = response.bytes.toString('utf8');
  if (response.status !== 200) throw new Error(`GET ${path} answered ${response.status}: ${text.slice(0, 500)}`);
  const body = JSON.parse(text) as { data: { visits: unknown[] }; paging: { after: string } };
  return { visits: body.data.visits.length, after: body.paging.after };
}
