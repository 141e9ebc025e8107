import { randomUUID } from 'node:crypto';
import { Injectable, Logger, type OnApplicationShutdown } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { growingLru } from '../common/growing-lru.js';
import pg from 'pg';
import type { DataSource } from 'typeorm';
import { AppConfig } from '../config/app-config.js';
import { postgresConnection } from '../database/postgres-session.js';
import { SqliteRows } from '../database/sqlite-rows.js';
import { dataVersionCommits } from '../database/transaction.js';

/** The channel the database announces data version changes on (migration NotifyDataVersion). */
export const DATA_VERSION_CHANNEL = 'results_data_version';
/** Clients whose versions are kept. */
const CLIENTS_KEPT = 100_000;
/** A kept version is read again after this long, whatever the notifications said (a safety net, not the mechanism). */
const KEPT_MS = 60_000;
/** Which table the clients are in, by its id (see verify). */
const CLIENTS_TABLE_SQL = "SELECT to_regclass('clients')::oid::text AS t";
/** How often the listening connection is checked, and how long the check may take. */
const CHECK_EVERY_MS = 10_000;
const CHECK_TIMEOUT_MS = 5_000;
/** How long an echo (see hears) may take to come back before the listener is taken as deaf. */
const ECHO_TIMEOUT_MS = 5_000;
/** Waits before listening again after the connection was lost: doubled per failure, up to the last. */
const RECONNECT_MS = [500, 1_000, 2_000, 5_000, 10_000, 30_000];

/**
 * The data version of each client (part of every cached visit page's key), without a
 * database round trip per request. On PostgreSQL a dedicated connection listens on
 * DATA_VERSION_CHANNEL, where the database announces every change of a version as its
 * transaction commits (from any replica or the CLI): a version read once is kept and raised
 * by the announcements. Kept versions are only trusted while the connection listens: when it
 * is lost (or fails its periodic check) they are all forgotten and read again per request
 * until it listens again; a version read before the connection listened is never kept. What
 * this process itself commits is seen by its next request at once (kept versions are
 * forgotten when such a commit ends, see dataVersionCommits), other replicas' commits as soon
 * as the announcement arrives (milliseconds). On SQLite (one file, possibly written by a CLI
 * in another process, with nothing to listen to) the version is read per request: an indexed
 * read in the same process, by a statement prepared once rather than through TypeORM.
 */
@Injectable()
export class ClientDataVersions implements OnApplicationShutdown {
  private readonly logger = new Logger(ClientDataVersions.name);
  private readonly known = growingLru<number, number>(CLIENTS_KEPT, { ttl: KEPT_MS });
  private readonly sql: string;
  private readonly postgres: boolean;
  /** SQLite's point read of a version, on the data source's connection (see SqliteRows.first). */
  private readonly sqlite: SqliteRows | null;
  /** True while the listening connection is up and checked. */
  private listening = false;
  /** Moves whenever kept versions may have missed a change: a read begun before it moved is not kept. */
  private generation = 0;
  private seenCommits = 0;
  private client: pg.Client | null = null;
  /** The clients table's id as the last check read it (null: missing; undefined: not read yet on this connection). */
  private clientsTable: string | null | undefined = undefined;
  /** The schema the announcements must name: the one this replica's tables are in, as the server resolved it. */
  private schema: string | null = null;
  private check: NodeJS.Timeout | null = null;
  private retry: NodeJS.Timeout | null = null;
  private failures = 0;
  private started = false;
  private stopped = false;
  /** True from an echo that did not come back until one does (see hears). */
  private deaf = false;
  /** The echo the listening connection waits for (see hears), with what to do when it comes, or when the connection is lost first. */
  private echo: { payload: string; heard: () => void; abandoned: (error: Error) => void } | null = null;
  /** A check of the listening connection under way (see verify). */
  private verifying = false;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {
    this.postgres = db.options.type === 'postgres';
    this.sqlite = this.postgres ? null : new SqliteRows(db);
    // The write sequence is the version (see bumpDataVersion): it moves with every change and never goes back, a restore included.
    this.sql = `SELECT change_seq AS v FROM clients WHERE id = ${this.postgres ? '$1' : '?'}`;
  }

  async onApplicationShutdown(): Promise<void> {
    this.stopped = true;
    const client = this.client;
    this.lose();
    await client?.end().catch(() => undefined);
  }

  /**
   * Whether the database's announcements do not reach this process, so that versions are read
   * per request (for health): its listening connection did not hear its own notification (see
   * hears), or could not be made or was lost and is being tried again. A DATABASE_DIRECT_URL
   * out of reach (a wrong host or password, a certificate missing) never listened, and
   * readiness said nothing of it.
   */
  get notificationsMissing(): boolean {
    return this.deaf || (!this.listening && this.failures > 0);
  }

  /** Whether versions are being learned by notification (for health and tests). */
  get isListening(): boolean {
    return this.listening;
  }

  /** The client's data version; null when there is no such client. */
  async current(clientId: number): Promise<number | null> {
    // Listening starts with the first version asked for: processes that serve no pages (the CLI) hold no connection for it.
    if (this.postgres && !this.started) {
      this.started = true;
      void this.listen();
    }
    const commits = dataVersionCommits(this.db);
    if (commits !== this.seenCommits) {
      this.seenCommits = commits;
      this.forget();
    }
    if (this.listening) {
      const kept = this.known.get(clientId);
      if (kept !== undefined) return kept;
    }
    const generation = this.generation;
    const version = await this.read(clientId);
    if (version !== null && this.listening && generation === this.generation) this.raise(clientId, version);
    return version;
  }

  private async read(clientId: number): Promise<number | null> {
    const row = this.sqlite ? this.sqlite.first<{ v: number | string }>(this.sql, [clientId]) : (await this.db.query<{ v: number | string }[]>(this.sql, [clientId]))[0];
    return row === undefined ? null : Number(row.v);
  }

  /** Versions only grow: an announcement and a read that cross keep the newer. */
  private raise(clientId: number, version: number): void {
    const kept = this.known.get(clientId);
    if (kept === undefined || version > kept) this.known.set(clientId, version);
  }

  private forget(): void {
    this.generation++;
    this.known.clear();
  }

  private async listen(): Promise<void> {
    if (this.stopped) return;
    let client: pg.Client;
    try {
      const connection = postgresConnection(this.config, 'direct');
      client = new pg.Client({
        connectionString: connection.url,
        // Named with its schema, so that an operator (or a test) can tell the listeners of two schemas apart.
        application_name: `results-service versions ${this.config.DATABASE_SCHEMA}`.slice(0, 63),
        keepAlive: true,
        connectionTimeoutMillis: CHECK_TIMEOUT_MS,
        // The same search path and settings as the service's own connections.
        options: connection.options,
      });
    } catch (error) {
      // node-postgres reads the URL's certificate files (sslrootcert, sslcert, sslkey) as it
      // makes the client: one missing (a DATABASE_DIRECT_URL a start never uses, a mounted
      // secret being swapped) threw here, out of every caller's reach (listen runs unawaited):
      // the process ended on the rejection, and no listening was tried again. It is a
      // connection lost like any other: versions read per request, said why, tried again.
      this.retryLater(error as Error);
      return;
    }
    this.client = client;
    client.on('error', (error) => this.lost(client, error));
    client.on('end', () => this.lost(client, new Error('the connection ended')));
    client.on('notification', (message) => {
      if (message.channel !== DATA_VERSION_CHANNEL || client !== this.client) return;
      if (this.echo !== null && message.payload === this.echo.payload) this.echo.heard();
      else this.announced(message.payload);
    });
    try {
      await client.connect();
      // The listener is idle by design between its checks: a server that ends idle sessions
      // (idle_session_timeout, PostgreSQL 14 and later, as managed databases set it) ended it
      // every few seconds, a warning each time and versions read per request. Its own session
      // is kept from that (a setting any role may make; unknown before 14, and left so).
      const idle = (await client.query<{ v: string | null }>("SELECT current_setting('idle_session_timeout', true) AS v")).rows[0]?.v ?? null;
      if (idle !== null && idle !== '0') await client.query('SET idle_session_timeout = 0');
      await client.query(`LISTEN ${DATA_VERSION_CHANNEL}`);
      // The name as the trigger will give it (TG_TABLE_SCHEMA), whatever case the setting used.
      const { rows } = await client.query<{ schema: string | null }>('SELECT current_schema() AS schema');
      if (!rows[0]?.schema) throw new Error(`schema ${this.config.DATABASE_SCHEMA} does not exist`);
      this.schema = rows[0].schema;
      this.clientsTable = (await client.query<{ t: string | null }>(CLIENTS_TABLE_SQL)).rows[0]?.t ?? null;
      await this.hears(client);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    }
    if (client !== this.client) return;
    // Versions read from here on are covered by the announcements of every later commit.
    this.forget();
    this.listening = true;
    if (this.failures > 0) this.logger.log('listening for data version changes again');
    this.failures = 0;
    this.check = setInterval(() => void this.verify(client), CHECK_EVERY_MS).unref();
  }

  /**
   * Sends a notification through the pool, as another replica's commit would be announced,
   * and waits for it on the listening connection. A pooler in transaction mode (PgBouncer's
   * pool_mode = transaction) between the service and PostgreSQL answers the LISTEN, then
   * gives the session that ran it to other clients: the announcements never come, and a
   * listener that trusted its LISTEN kept versions, and served pages, up to a minute old
   * (KEPT_MS) after another replica or the CLI had changed them, without a word. A listener
   * that does not hear its echo is a lost one: versions are read per request, it says why, and
   * tries again.
   */
  private async hears(client: pg.Client): Promise<void> {
    const payload = JSON.stringify({ echo: randomUUID() });
    let heard!: () => void;
    let abandoned!: (error: Error) => void;
    const arrived = new Promise<void>((resolve, reject) => {
      heard = resolve;
      abandoned = reject;
    });
    // Abandoned (see lose) while the notification is still being sent: the race below rejects with it.
    arrived.catch(() => undefined);
    this.echo = { payload, heard, abandoned };
    let timer: NodeJS.Timeout | undefined;
    try {
      // Sent (committed) before the wait is counted: a pool busy with requests delays the sending, not the delivery.
      await this.db.query('SELECT pg_notify($1, $2)', [DATA_VERSION_CHANNEL, payload]);
      const timeout = new Promise<never>((_, fail) => {
        timer = setTimeout(
          () =>
            fail(
              new Error(
                `a notification sent through DATABASE_URL did not reach the listening connection within ${ECHO_TIMEOUT_MS} ms ` +
                  '(a pooler in transaction mode between the service and PostgreSQL? Set DATABASE_DIRECT_URL to PostgreSQL itself)',
              ),
            ),
          ECHO_TIMEOUT_MS,
        );
      });
      await Promise.race([arrived, timeout]).catch((error: unknown) => {
        // Only the connection in use says whether notifications reach this process: the wait of
        // one lost meanwhile ran out after its successor had heard its own echo, and readiness
        // then reported notifications missing while they arrived, until the next reconnection.
        if (client === this.client) this.deaf = true;
        throw error;
      });
      if (client === this.client) this.deaf = false;
    } finally {
      clearTimeout(timer);
      if (client === this.client) this.echo = null;
    }
  }

  private announced(payload: string | undefined): void {
    try {
      const { schema, client, version } = JSON.parse(payload ?? '') as { schema?: unknown; client?: unknown; version?: unknown };
      if (schema !== this.schema || typeof client !== 'number' || typeof version !== 'number') return;
      if (this.listening) this.raise(client, version);
    } catch {
      // Not an announcement of ours.
    }
  }

  /**
   * The periodic check of the listening connection (run by a timer; public for tests). A
   * connection that stopped answering (a silent network) is as lost as a closed one. The check
   * also reads which table the clients are in: a restore (pg_restore --clean) drops the table
   * and makes it again, with the versions of the backup and no announcement, so kept versions
   * are forgotten when the table is missing or another one (read per request from then on,
   * which answers 503 while the restore is under way), instead of serving pages of before the
   * restore until they expire.
   */
  async verify(client: pg.Client | null = this.client): Promise<void> {
    // One at a time: a check slow to answer (5 s) and its echo (5 s more) may outlast the timer's 10 s.
    if (!client || this.verifying) return;
    this.verifying = true;
    try {
      await this.verifyNow(client);
    } finally {
      this.verifying = false;
    }
  }

  private async verifyNow(client: pg.Client): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, fail) => {
      timer = setTimeout(() => fail(new Error(`no answer within ${CHECK_TIMEOUT_MS} ms`)), CHECK_TIMEOUT_MS);
    });
    try {
      const { rows } = await Promise.race([client.query<{ t: string | null }>(CLIENTS_TABLE_SQL), timeout]);
      if (client === this.client) this.sawClientsTable(rows[0]?.t ?? null);
    } catch (error) {
      this.lost(client, error as Error);
      return;
    } finally {
      clearTimeout(timer);
    }
    if (client !== this.client) return;
    // And whether announcements still reach it: a pooler in transaction mode may give the
    // listening client back the session of its LISTEN for a while (a quiet pool), so that the
    // echo at the start arrived, then lend that session to another client: without another
    // echo, versions were kept, and pages served, up to KEPT_MS old with nothing said.
    try {
      await this.hears(client);
    } catch (error) {
      this.lost(client, error as Error);
    }
  }

  private sawClientsTable(table: string | null): void {
    const before = this.clientsTable;
    this.clientsTable = table;
    if (before === undefined || before === table) return;
    this.forget();
    this.logger.warn(
      table === null
        ? 'the clients table is missing (a restore under way?): data versions are read per request'
        : 'the clients table was made again (a restore?): data versions are read again',
    );
  }

  private lost(client: pg.Client, error: Error): void {
    if (client !== this.client) return;
    this.lose();
    void client.end().catch(() => undefined);
    this.retryLater(error);
  }

  /** Listens again after the wait for the failures so far (see RECONNECT_MS), saying why it does not listen meanwhile. */
  private retryLater(error: Error): void {
    if (this.stopped) return;
    const wait = RECONNECT_MS[Math.min(this.failures, RECONNECT_MS.length - 1)];
    this.failures++;
    this.logger.warn(`not listening for data version changes (${error.message}); versions are read per request, listening again in ${wait} ms`);
    this.retry = setTimeout(() => void this.listen(), wait).unref();
  }

  /**
   * Stops trusting kept versions and drops the connection's timers, the wait for its echo
   * included: a shutdown is not held for it, and a lost connection's wait does not outlive it.
   */
  private lose(): void {
    this.echo?.abandoned(new Error('the connection was lost before its own notification came back'));
    this.echo = null;
    this.client = null;
    this.listening = false;
    this.forget();
    if (this.check) clearInterval(this.check);
    if (this.retry) clearTimeout(this.retry);
    this.check = null;
    this.retry = null;
  }
}
