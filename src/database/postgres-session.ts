import pg from 'pg';
import type { AppConfig } from '../config/app-config.js';

/**
 * Settings every PostgreSQL session of the service runs with, whatever the server, database or
 * role sets by default. node-postgres reads dates and timestamps only as the ISO DateStyle writes
 * them: under `SQL, DMY` (a usual European setting) every one read as null, and the token
 * endpoint and the CLI failed on the signing keys' dates. UTC and the default interval style
 * make what the server writes the same on every database.
 */
const SESSION_SETTINGS = ['DateStyle=ISO,YMD', 'TimeZone=UTC', 'IntervalStyle=postgres'];

/** Where a process connects, and the startup options of its sessions. */
export interface PostgresConnection {
  /** DATABASE_URL without its own `options` parameter, which `options` holds. */
  url: string;
  /** The URL's own `options` first, then the schema's search path and SESSION_SETTINGS, which win. */
  options: string;
}

/**
 * The connection of every PostgreSQL client the service opens (the pool, the data-version
 * listener, the schema check). `direct`: a connection that needs a session of its own on
 * PostgreSQL for as long as it is open, which a pooler in transaction mode gives to another
 * client between transactions (the listener's LISTEN): DATABASE_DIRECT_URL when it is set. An `options` parameter in DATABASE_URL (`?options=-c%20…`) is
 * kept, ahead of the service's own: node-postgres takes the URL's over the client's, and the
 * sessions then ran without the search path (tables of another schema) or the settings above.
 *
 * Dates given to node-postgres as parameters are written in UTC: it writes them in the
 * process's local time otherwise, with the offset rounded to whole minutes, and an instant
 * before the zone's standard time (local mean time, offsets with seconds) was stored seconds
 * off, or in the wrong era, depending on the process's TZ.
 */
export function postgresConnection(
  config: Pick<AppConfig, 'DATABASE_URL' | 'DATABASE_DIRECT_URL' | 'DATABASE_SCHEMA'>,
  route: 'pooled' | 'direct' = 'pooled',
): PostgresConnection {
  pg.defaults.parseInputDatesAsUTC = true;
  let url = route === 'direct' ? (config.DATABASE_DIRECT_URL ?? config.DATABASE_URL!) : config.DATABASE_URL!;
  const parsed = new URL(url);
  // Given more than once, node-postgres takes the last, as for every URL parameter.
  const own = parsed.searchParams.getAll('options').at(-1) ?? null;
  if (own !== null) {
    parsed.searchParams.delete('options');
    url = parsed.toString();
  }
  const settings = [`search_path=${config.DATABASE_SCHEMA}`, ...SESSION_SETTINGS].map((s) => `-c ${s}`);
  return { url, options: [own ?? '', ...settings].filter((o) => o !== '').join(' ') };
}
