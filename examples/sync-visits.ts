/**
 * Keeps a local copy of a client's visits in sync through the change feed: the first run reads
 * every change since SINCE, each later run resumes from the token the previous one stored.
 * Types come from the published contract:
 *   npx openapi-typescript https://results.example.com/docs/openapi.json -o results-api.ts
 * Run: BASE_URL=… API_KEY=… CLIENT_ID=… CLIENT_SECRET=… SVC_CLIENT_ID=1001 node sync-visits.js
 */
import { readFile, rename, writeFile } from 'node:fs/promises';
import createClient from 'openapi-fetch';
import type { components, paths } from '../test/generated/results-api.js';

type Visit = components['schemas']['VisitDto'];

export interface SyncOptions {
  baseUrl: string;
  apiKey: string;
  clientId: string;
  clientSecret: string;
  svcClientId: number;
  /** Where the first run starts (ISO date-time); later runs resume from the stored token. */
  since: string;
  /** The copy: every visit by id, in its latest state. */
  copyFile: string;
  /** The token to resume from. */
  tokenFile: string;
  take?: number;
}

/** Replaces a file whole, so that a crash leaves the old or the new content, never half. */
async function replace(file: string, text: string): Promise<void> {
  await writeFile(`${file}.tmp`, text);
  await rename(`${file}.tmp`, file);
}

/** Reads every change after the stored token (or since `since`) into the copy; the number of visits read. */
export async function syncVisits(o: SyncOptions): Promise<number> {
  const api = createClient<paths>({ baseUrl: o.baseUrl, headers: { 'svc-api-key': o.apiKey } });
  const token = await api.POST('/connect/token', {
    body: { grant_type: 'client_credentials', client_id: o.clientId, client_secret: o.clientSecret },
    bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
    headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
  });
  if (!token.data) throw new Error(`token request failed: ${token.response.status} ${JSON.stringify(token.error)}`);
  const headers = { Authorization: `Bearer ${token.data.access_token}` };

  const copy = JSON.parse(await readFile(o.copyFile, 'utf8').catch(() => '{}')) as Record<string, Visit>;
  let after = (await readFile(o.tokenFile, 'utf8').catch(() => '')).trim() || undefined;
  const take = o.take ?? 500;
  let read = 0;
  for (;;) {
    const query = after ? { SvcClientId: o.svcClientId, Take: take, after } : { SvcClientId: o.svcClientId, Take: take, Since: o.since };
    const page = await api.GET('/visits/standard/changes', { params: { query }, headers });
    if (!page.data) throw new Error(`changes request failed: ${page.response.status} ${JSON.stringify(page.error)}`);
    const { visits, removed } = page.data.data;
    for (const visit of visits) copy[visit.visitId] = visit;
    // Visits moved out of what this query selects (another brand or visit type than it or the credential holds).
    for (const gone of removed) delete copy[gone.visitId];
    read += visits.length;
    // The copy first, then the token: a crash in between reads a page again, never skips one.
    await replace(o.copyFile, JSON.stringify(copy));
    await replace(o.tokenFile, page.data.paging.after);
    after = page.data.paging.after;
    if (visits.length + removed.length < take) return read;
  }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const env = (name: string): string => process.env[name] ?? (() => { throw new Error(`${name} is not set`); })();
  const read = await syncVisits({
    baseUrl: env('BASE_URL'),
    apiKey: env('API_KEY'),
    clientId: env('CLIENT_ID'),
    clientSecret: env('CLIENT_SECRET'),
    svcClientId: Number(env('SVC_CLIENT_ID')),
    since: process.env.SINCE ?? new Date(Date.now() - 30 * 86_400_000).toISOString(),
    copyFile: process.env.COPY_FILE ?? 'visits.json',
    tokenFile: process.env.TOKEN_FILE ?? 'visits.token',
  });
  console.log(`${read} changed visits read`);
}
