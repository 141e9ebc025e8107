import pg from 'pg';
import { EventSubscriber, type EntitySubscriberInterface, type TransactionStartEvent } from 'typeorm';
import type { AppConfig } from '../config/app-config.js';

/**
 * Settings every PostgreSQL session of the service runs with, whatever the server, database or
 * role sets by default. node-postgres reads dates and timestamps only as the ISO DateStyle writes
 * them: under `SQL, DMY` (a usual European setting) every one read as null, and the token
 * endpoint and the CLI failed on the signing keys' dates. UTC and the default interval style
 * make what the server writes the same on every database. extra_float_digits: a double
 * precision column is sent as text, in 15 significant digits where a database or role sets
 * the setting to 0 (as older clients' configurations did), and node-postgres reads that text
 * as another number than the one stored (12.345678901234567 read as 12.3456789012346): a
 * re-import of the same file counted every such visit as changed (a later modificationDate,
 * the change feed again), and a visit written again from its row (its branch moved to another
 * brand) was served with the rounded score. From 1 up the server writes the shortest text
 * that reads back as the same double (PostgreSQL 12 and later); 3 gives every digit on earlier ones.
 */
const SESSION_SETTINGS = ['DateStyle=ISO,YMD', 'TimeZone=UTC', 'IntervalStyle=postgres', 'extra_float_digits=3'];

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

/** What a session runs with, of the settings postgresConnection starts it with (read by SESSION_SETTINGS_SQL). */
export interface SessionSettings {
  search_path: string;
  datestyle: string;
  timezone: string;
  intervalstyle: string;
  extra_float_digits: string;
  /** The server's version (120000 for 12.0): what extra_float_digits needs depends on it. */
  server_version_num: string;
}

export const SESSION_SETTINGS_SQL =
  "SELECT current_setting('search_path') AS search_path, current_setting('DateStyle') AS datestyle, " +
  "current_setting('TimeZone') AS timezone, current_setting('IntervalStyle') AS intervalstyle, " +
  "current_setting('extra_float_digits') AS extra_float_digits, current_setting('server_version_num') AS server_version_num";

/**
 * What differs between the settings a session was started with and those it runs with, in one
 * message; null when nothing does. A pooler between the service and PostgreSQL may drop
 * startup parameters (PgBouncer refuses `options` and `statement_timeout` unless told to
 * ignore them, in ignore_startup_parameters): the sessions then ran in the role's search path,
 * and a start made every table in `public`, beside whatever was there, while the migrations'
 * record of them went to DATABASE_SCHEMA; a DateStyle other than ISO had node-postgres read
 * every date as null. Settings the role or the database give every session (ALTER ROLE …
 * SET), or the pooler's, pass as well as the startup parameters do.
 */
export function sessionSettingsProblem(row: SessionSettings, schema: string): string | null {
  const first = row.search_path.split(',')[0].trim().replace(/^"(.*)"$/, '$1');
  const wrong = [
    ...(first === schema ? [] : [`search_path is ${row.search_path}, not ${schema}`]),
    ...(row.datestyle.startsWith('ISO,') ? [] : [`DateStyle is ${row.datestyle}, not ISO`]),
    ...(['UTC', 'Etc/UTC'].includes(row.timezone) ? [] : [`TimeZone is ${row.timezone}, not UTC`]),
    ...(row.intervalstyle === 'postgres' ? [] : [`IntervalStyle is ${row.intervalstyle}, not postgres`]),
    // From PostgreSQL 12 any value from 1 writes each double exactly (see SESSION_SETTINGS): a
    // role's 1, PostgreSQL's default, passes. Before 12 a value is digits added to 15, and a
    // double needs 17: 1 wrote 16, read back as another number.
    ...(Number(row.extra_float_digits) >= leastFloatDigits(row) ? [] : [`extra_float_digits is ${row.extra_float_digits}, not ${leastFloatDigits(row)} or more`]),
  ];
  if (wrong.length === 0) return null;
  return (
    `DATABASE_URL gives sessions without the settings the service starts them with (${wrong.join('; ')}): ` +
    'a pooler between the service and PostgreSQL drops them (PgBouncer with ignore_startup_parameters)? ' +
    'Give them to the role instead (README, "Running on PostgreSQL and Redis")'
  );
}

/** The least extra_float_digits with which the server writes each double exactly. */
const leastFloatDigits = (row: SessionSettings): number => (Number(row.server_version_num) >= 120000 ? 1 : 2);

/**
 * Checks each connection of the pool once, when it is made, before it runs anything: where the
 * start's check (refuseSessionsWithoutSettings) passed on one session, a pooler in session mode
 * that resets its server connections between clients (PgBouncer's DISCARD ALL after a
 * connect_query) gave the next one the role's search path, and a command failed on tables it
 * could not find (or would have found another schema's, in `public`). Such a connection is
 * closed and the statement waiting for it fails, rather than running where it must not.
 */
export function checkedOnConnect(schema: string, statementTimeoutMs?: number): (client: pg.ClientBase) => Promise<void> {
  return async (client) => {
    const { rows } = await client.query<SessionSettings & { statement_timeout_ms: string }>(CONNECTION_SETTINGS_SQL);
    const problem = rows[0] ? sessionSettingsProblem(rows[0], schema) : null;
    if (problem !== null) throw new Error(problem);
    if (statementTimeoutMs !== undefined && rows[0] && Number(rows[0].statement_timeout_ms) !== statementTimeoutMs) {
      timeoutsInTransactions.set(client, statementTimeoutMs);
    }
  };
}

const CONNECTION_SETTINGS_SQL = `${SESSION_SETTINGS_SQL}, (SELECT setting FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout_ms`;

/**
 * The connections whose sessions run with another statement_timeout than the one they were
 * started with, and the one each transaction on them is given (SET LOCAL). A pooler that
 * ignores the startup parameter (PgBouncer's ignore_startup_parameters, as the README sets it)
 * leaves the role's: 10 s, the service's, for the CLI too, whose commands may run a statement
 * for 10 minutes (an import's, a migration's), and they were cancelled after 10 s. Not a SET of
 * the session: in transaction mode the pooler lends it to other clients after the transaction,
 * and every replica's statements would then have run with the CLI's timeout.
 */
const timeoutsInTransactions = new WeakMap<pg.ClientBase, number>();

/** Gives each transaction the statement timeout its connection's session was meant to have (see timeoutsInTransactions). */
@EventSubscriber()
export class StatementTimeoutInTransactions implements EntitySubscriberInterface {
  async afterTransactionStart(event: TransactionStartEvent): Promise<void> {
    const client = (event.queryRunner as { databaseConnection?: pg.ClientBase }).databaseConnection;
    const ms = client ? timeoutsInTransactions.get(client) : undefined;
    if (ms !== undefined) await event.queryRunner.query(`SET LOCAL statement_timeout = ${Math.trunc(ms)}`);
  }
}
