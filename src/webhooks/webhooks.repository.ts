import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { readsVisits } from '../auth/scopes.js';
import { AppConfig } from '../config/app-config.js';
import { databaseNow } from '../database/database-clock.js';
import { inTransaction } from '../database/transaction.js';
import { VISITS_CHANGED } from './dto/webhook-event.dto.js';
import { WebhookDelivery } from './entities/webhook-delivery.entity.js';
import { WebhookEndpoint } from './entities/webhook-endpoint.entity.js';
import { newEventId } from './webhook-event.js';

/** What an import tells the outbox of each visit it writes. */
export interface ChangedVisit {
  clientId: number;
  brandId: number | null;
  visitType: string;
  /** Its brand and visit type before this write, when the write moved it from them. */
  before?: { brandId: number | null; visitType: string };
}

/** An event claimed for delivery, with what sending it needs. */
export interface ClaimedDelivery {
  eventId: string;
  endpointId: string;
  type: string;
  clientId: number;
  count: number;
  createdAt: Date;
  /** Attempts started, this one included. */
  attempts: number;
  lockToken: string;
  url: string;
  allowPrivate: boolean;
  /** Sealed secrets (see SecretBox): the current one, and the one before a rotation while it still signs. */
  secret: string;
  previousSecret: string | null;
  previousSecretUntil: Date | null;
  /**
   * Whether the endpoint's credential may still read the client's visits (a visits scope and the
   * client), as when the event was written: an operator may have narrowed it since.
   */
  entitled: boolean;
}

export interface ClaimRequest {
  now: Date;
  /** Events to claim at most. */
  limit: number;
  /** Requests in flight in this process, per endpoint. */
  inFlight: ReadonlyMap<string, number>;
  perEndpoint: number;
  /**
   * How long a claimed event is leased, counted from the moment it is claimed, not from `now`:
   * a claim that waited (for a pool connection, a lock, SQLite's write lock) must not hand out
   * a lease already spent, which another claim would take again while the request is under way.
   */
  leaseMs: number;
  lockToken: string;
}

/** A credential's entitlement as stored: comma- or space-separated lists, null for "all". */
interface EntitlementRow {
  id: string;
  scopes: string;
  client_ids: string;
  brand_ids: string | null;
  visit_types: string | null;
}

const list = (text: string): string[] => text.split(/[\s,]+/).filter(Boolean);

/** How many of the written visits of `clientId` a credential may read. */
/** Whether a credential may read a client's visits at all: a visits scope, and the client among its own. */
function readsClientVisits(row: Pick<EntitlementRow, 'scopes' | 'client_ids'>, clientId: number): boolean {
  return readsVisits(list(row.scopes)) && list(row.client_ids).map(Number).includes(clientId);
}

function visibleCount(row: EntitlementRow, clientId: number, visits: readonly ChangedVisit[]): number {
  // A credential whose scopes read no visits is told nothing of them, not even how many changed.
  if (!readsClientVisits(row, clientId)) return 0;
  const brands = row.brand_ids === null ? null : new Set(list(row.brand_ids).map(Number));
  const types = row.visit_types === null ? null : new Set(list(row.visit_types));
  const visible = (v: { brandId: number | null; visitType: string }): boolean =>
    (!brands || (v.brandId !== null && brands.has(v.brandId))) && (!types || types.has(v.visitType));
  // A visit that left what the credential may read is a change to its copy too (the feed reports it removed).
  return visits.filter((v) => v.clientId === clientId && (visible(v) || (v.before !== undefined && visible(v.before)))).length;
}

/** A stored time as a Date: PostgreSQL gives Dates, SQLite the UTC text TypeORM writes. */
function readTime(value: Date | string | null): Date | null {
  if (value === null) return null;
  return value instanceof Date ? value : new Date(`${value.replace(' ', 'T')}Z`);
}

/**
 * Webhook endpoints and the outbox of their deliveries: all SQL of the feature. The outbox is
 * written in the transaction of the change (recordVisitChanges) and claimed with a lease by
 * the dispatcher of any process; on PostgreSQL the claim skips rows another process holds.
 */
@Injectable()
export class WebhooksRepository {
  private readonly postgres: boolean;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly config: AppConfig,
  ) {
    this.postgres = db.options.type === 'postgres';
  }

  /** `?` placeholders as the database wants them. */
  private sql(text: string): string {
    let n = 0;
    return this.postgres ? text.replace(/\?/g, () => `$${++n}`) : text;
  }

  /** A time as a parameter: a Date for PostgreSQL, the text TypeORM stores in SQLite (so they compare). */
  private time(at: Date): Date | string {
    return this.postgres ? at : at.toISOString().replace('T', ' ').replace('Z', '');
  }

  /**
   * The outbox's clock: the database's on PostgreSQL, which every replica and command shares,
   * the process's on SQLite (one host). Due times and leases are written and compared by it, so
   * a replica whose own clock is ahead neither takes an event another is sending (its lease
   * over by that clock) nor, behind, leaves events it writes or must send waiting for the gap.
   */
  now(tx: EntityManager | DataSource = this.db): Promise<Date> {
    return databaseNow(tx);
  }

  private async run(tx: EntityManager, text: string, params: unknown[]): Promise<number> {
    const result = await tx.queryRunner!.query(this.sql(text), params, true);
    return result.affected ?? 0;
  }

  /**
   * Adds an endpoint unless its credential has one at its URL already, which it gives instead.
   * The look and the insert are one transaction that holds the credential's row (PostgreSQL) or
   * the write lock (SQLite), so two adds of one URL at once make one endpoint, not two.
   */
  async insertEndpointOnce(endpoint: Omit<WebhookEndpoint, 'createdAt' | 'credential'>): Promise<WebhookEndpoint | null> {
    return inTransaction(this.db, async (tx) => {
      if (this.postgres) await tx.query('SELECT 1 FROM credentials WHERE client_id = $1 FOR NO KEY UPDATE', [endpoint.credentialId]);
      const existing = await tx.getRepository(WebhookEndpoint).findOneBy({ credentialId: endpoint.credentialId, url: endpoint.url });
      if (existing) return existing;
      // Dated by databaseNow, not the column's default, whose whole seconds on SQLite listed
      // endpoints added within one second by their random ids (see AuthRepository.createCredentials).
      await tx.getRepository(WebhookEndpoint).insert({ ...endpoint, createdAt: await databaseNow(tx) });
      return null;
    });
  }

  /**
   * Points an endpoint at another URL, unless another endpoint of its credential is at that URL
   * (a receiver would get every event twice): checked and written in one transaction holding the
   * credential's row, as insertEndpointOnce does. Its id, secrets and waiting events stay.
   */
  async moveEndpoint(id: string, url: string, allowPrivate: boolean): Promise<{ moved: true } | { moved: false; takenBy: string | null }> {
    return inTransaction(this.db, async (tx) => {
      const endpoints = tx.getRepository(WebhookEndpoint);
      const endpoint = await endpoints.findOneBy({ id });
      if (!endpoint) return { moved: false, takenBy: null };
      if (this.postgres) await tx.query('SELECT 1 FROM credentials WHERE client_id = $1 FOR NO KEY UPDATE', [endpoint.credentialId]);
      const existing = await endpoints.findOneBy({ credentialId: endpoint.credentialId, url });
      if (existing && existing.id !== id) return { moved: false, takenBy: existing.id };
      // Removed meanwhile (PostgreSQL): nothing to move.
      const { affected } = await endpoints.update({ id }, { url, allowPrivate });
      return affected === 0 ? { moved: false, takenBy: null } : { moved: true };
    });
  }

  /**
   * Changes an endpoint by what `change` makes of it as it stands, read and written in one
   * transaction that holds its row against other changes (PostgreSQL: FOR NO KEY UPDATE, which
   * an import's key-share lock does not wait for), so two changes at once never lose one.
   * Null when no endpoint has the id.
   */
  async changeEndpoint<T>(
    id: string,
    change: (endpoint: WebhookEndpoint) => { patch: Partial<Pick<WebhookEndpoint, 'secret' | 'previousSecret' | 'previousSecretUntil'>>; result: T },
  ): Promise<T | null> {
    return inTransaction(this.db, async (tx) => {
      const endpoints = tx.getRepository(WebhookEndpoint);
      const endpoint = await endpoints.findOne({ where: { id }, ...(this.postgres ? { lock: { mode: 'for_no_key_update' as const } } : {}) });
      if (!endpoint) return null;
      const { patch, result } = change(endpoint);
      if (Object.keys(patch).length > 0) await endpoints.update({ id }, patch);
      return result;
    });
  }

  findEndpoint(id: string): Promise<WebhookEndpoint | null> {
    return this.db.getRepository(WebhookEndpoint).findOneBy({ id });
  }

  /**
   * The endpoints and the events waiting for each, read from one snapshot: an event given up
   * (deleted in the transaction that marks its endpoint failing) is either still waiting for
   * an endpoint not yet failing, or gone from a failing one, never both. PostgreSQL reads in
   * a REPEATABLE READ transaction (one snapshot for both statements); on SQLite transactions
   * run one after another on the process's connection (see inTransaction), so none commits
   * between the two reads.
   */
  async endpointsWithPending(): Promise<{ endpoints: WebhookEndpoint[]; pending: Map<string, number>; disabledCredentials: Set<string> }> {
    const read = async (tx: EntityManager) => ({
      endpoints: await tx.getRepository(WebhookEndpoint).find({ order: { createdAt: 'ASC', id: 'ASC' } }),
      pending: await this.pendingCounts(tx),
      disabledCredentials: new Set(
        (await tx.query<{ id: string }[]>('SELECT client_id AS id FROM credentials WHERE disabled')).map((r) => r.id),
      ),
    });
    return this.postgres ? this.db.transaction('REPEATABLE READ', read) : inTransaction(this.db, read);
  }

  async updateEndpoint(id: string, patch: Partial<Pick<WebhookEndpoint, 'disabled' | 'secret' | 'previousSecret' | 'previousSecretUntil'>>): Promise<void> {
    await this.db.getRepository(WebhookEndpoint).update({ id }, patch);
  }

  /**
   * Removes an endpoint and, with it, the events waiting for it. On PostgreSQL its row is taken
   * first (FOR UPDATE): an import that has read it as a destination (a key-share lock, see
   * recordVisitChanges) is waited for, and one that reads it after waits for the removal and
   * then no longer finds it, so no event is written for an endpoint that is gone. Taking the row
   * before its events keeps the order an import takes them in.
   */
  async removeEndpoint(id: string): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      if (this.postgres) await tx.query('SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR UPDATE', [id]);
      await tx.getRepository(WebhookDelivery).delete({ endpointId: id });
      await tx.getRepository(WebhookEndpoint).delete({ id });
    });
  }

  /** Events waiting per endpoint, read by `manager` (the list's transaction). */
  private async pendingCounts(manager: EntityManager): Promise<Map<string, number>> {
    const rows = await manager.query<{ id: string; n: number | string }[]>(
      'SELECT endpoint_id AS id, COUNT(*) AS n FROM webhook_deliveries GROUP BY endpoint_id',
    );
    return new Map(rows.map((r) => [r.id, Number(r.n)]));
  }

  /**
   * Writes, in the import's transaction `tx`, a visits.changed event for every active endpoint
   * of every active credential that may read some of `visits` (a visits scope, and their
   * client, brand and type), counting only those it may read. An event no attempt has been made for yet takes the further changes of its client
   * (coalescing), and a new id with them (see addToEvent); otherwise a new one is due after WEBHOOKS_COALESCE_MS. The transaction holds
   * the client's row lock (see VisitsRepository.upsertBatch), so two writers of one client
   * never both open an event; a claim that wins the race freezes the event (attempts > 0)
   * and this writer opens a new one.
   */
  async recordVisitChanges(tx: EntityManager, visits: readonly ChangedVisit[], at: Date): Promise<void> {
    if (visits.length === 0) return;
    // On PostgreSQL each endpoint read is held (FOR KEY SHARE) until the import commits: a
    // removal waits for it, instead of deleting the endpoint its event is about to name.
    const endpoints = await tx.query<EntitlementRow[]>(
      `SELECT e.id, c.scopes, c.client_ids, c.brand_ids, c.visit_types FROM webhook_endpoints e
        JOIN credentials c ON c.client_id = e.credential_id WHERE NOT e.disabled AND NOT c.disabled ORDER BY e.id${this.postgres ? ' FOR KEY SHARE OF e' : ''}`,
    );
    const clients = [...new Set(visits.map((v) => v.clientId))].sort((a, b) => a - b);
    for (const endpoint of endpoints) {
      for (const clientId of clients) {
        const count = visibleCount(endpoint, clientId, visits);
        if (count > 0) await this.addToEvent(tx, endpoint.id, clientId, count, at);
      }
    }
  }

  private async addToEvent(tx: EntityManager, endpointId: string, clientId: number, count: number, at: Date): Promise<void> {
    // The event takes a new id with the changes it takes on. No receiver has seen an event no
    // attempt was made for, except when a restored backup brought it back after its delivery:
    // under its old id, a receiver that ignores ids it has processed would drop it, and with it
    // the changes written after the restore. `attempts = 0` is weighed again on the row updated
    // (on PostgreSQL once a claim holding it has committed), so an event claimed meanwhile keeps
    // its id and body, and this writer opens a new one.
    const added = await this.run(
      tx,
      `UPDATE webhook_deliveries SET count = count + ?, event_id = ? WHERE attempts = 0 AND event_id = (
        SELECT event_id FROM webhook_deliveries WHERE endpoint_id = ? AND client_id = ? AND type = ? AND attempts = 0 LIMIT 1)`,
      [count, newEventId(), endpointId, clientId, VISITS_CHANGED],
    );
    if (added > 0) return;
    await tx.query(
      this.sql(`INSERT INTO webhook_deliveries (event_id, endpoint_id, type, client_id, count, created_at, due_at, attempts)
        VALUES (?, ?, ?, ?, ?, ?, ?, 0)`),
      [newEventId(), endpointId, VISITS_CHANGED, clientId, count, this.time(at), this.time(new Date(at.getTime() + this.config.WEBHOOKS_COALESCE_MS))],
    );
  }

  /**
   * Whether any event is due, unclaimed and sendable (its endpoint and credential enabled): the
   * dispatcher's cheap look before it claims. The events a disabled endpoint keeps until it is
   * enabled are no reason to claim: every poll would open a claim's transaction (on SQLite
   * taking the write lock) that finds nothing, for as long as the endpoint stays disabled.
   * Gives the outbox's now (see now()) when one is, null when none: on PostgreSQL read in the
   * same statement, so an idle poll is one query.
   */
  async dueNow(): Promise<Date | null> {
    const due = `SELECT 1 FROM webhook_deliveries d
        JOIN webhook_endpoints e ON e.id = d.endpoint_id
        JOIN credentials c ON c.client_id = e.credential_id
        WHERE d.due_at <= NOW_ AND (d.locked_until IS NULL OR d.locked_until <= NOW_) AND NOT e.disabled AND NOT c.disabled LIMIT 1`;
    if (this.postgres) {
      const rows = await this.db.query<{ now: Date; due: boolean }[]>(
        `WITH t AS (SELECT clock_timestamp() AS now) SELECT t.now, EXISTS (${due.replace(/NOW_/g, 't.now')}) AS due FROM t`,
      );
      return rows[0]?.due ? new Date(rows[0].now) : null;
    }
    const now = new Date();
    const rows = await this.db.query<unknown[]>(due.replace(/NOW_/g, '?'), [this.time(now), this.time(now)]);
    return rows.length > 0 ? now : null;
  }

  /**
   * Claims due events for this process: at most `limit`, and per endpoint no more than its
   * free slots. Each claimed event gets a lease (locked_until) and a token, and its attempt is
   * counted now, so an attempt whose process dies is counted and the event is taken again
   * after the lease. On PostgreSQL rows another process is claiming are skipped, not waited for.
   * Candidates are read oldest due first, a window at a time; an endpoint whose slots fill is
   * left out of the next window, so that one endpoint's backlog of due events (a receiver
   * failing for hours) cannot fill every window and keep the other endpoints' events unclaimed.
   */
  async claim(req: ClaimRequest): Promise<ClaimedDelivery[]> {
    return inTransaction(this.db, async (tx) => {
      const now = this.time(req.now);
      const taken = new Map(req.inFlight);
      const full = new Set([...taken].filter(([, n]) => n >= req.perEndpoint).map(([id]) => id));
      const chosen: string[] = [];
      while (chosen.length < req.limit) {
        const window = (req.limit - chosen.length) * 4;
        const candidates = await tx.query<{ event_id: string; endpoint_id: string }[]>(
          this.sql(`SELECT d.event_id, d.endpoint_id FROM webhook_deliveries d
            JOIN webhook_endpoints e ON e.id = d.endpoint_id
            JOIN credentials c ON c.client_id = e.credential_id
            WHERE d.due_at <= ? AND (d.locked_until IS NULL OR d.locked_until <= ?) AND NOT e.disabled AND NOT c.disabled
            AND (d.lock_token IS NULL OR d.lock_token <> ?)
            ${full.size > 0 ? `AND d.endpoint_id NOT IN (${[...full].map(() => '?').join(', ')})` : ''}
            ORDER BY d.due_at LIMIT ?${this.postgres ? ' FOR UPDATE OF d SKIP LOCKED' : ''}`),
          [now, now, req.lockToken, ...full, window],
        );
        const picked: string[] = [];
        for (const row of candidates) {
          const n = taken.get(row.endpoint_id) ?? 0;
          if (chosen.length + picked.length >= req.limit || n >= req.perEndpoint) continue;
          taken.set(row.endpoint_id, n + 1);
          if (n + 1 >= req.perEndpoint) full.add(row.endpoint_id);
          picked.push(row.event_id);
        }
        if (picked.length > 0) {
          // Leased and marked at once: the next window, read in this transaction, does not find them again.
          const leaseUntil = new Date(Math.max(req.now.getTime(), (await this.now(tx)).getTime()) + req.leaseMs);
          await tx.query(
            this.sql(`UPDATE webhook_deliveries SET attempts = attempts + 1, locked_until = ?, lock_token = ? WHERE event_id IN (${picked.map(() => '?').join(', ')})`),
            [this.time(leaseUntil), req.lockToken, ...picked],
          );
          chosen.push(...picked);
        }
        // A window not filled holds every due event there is.
        if (candidates.length < window) break;
      }
      return chosen.length === 0 ? [] : this.claimed(tx, chosen);
    });
  }

  private async claimed(tx: EntityManager, eventIds: string[]): Promise<ClaimedDelivery[]> {
    const rows = await tx.query<Record<string, unknown>[]>(
      this.sql(`SELECT d.event_id, d.endpoint_id, d.type, d.client_id, d.count, d.created_at, d.attempts, d.lock_token,
          e.url, e.allow_private, e.secret, e.previous_secret, e.previous_secret_until, c.scopes, c.client_ids
        FROM webhook_deliveries d JOIN webhook_endpoints e ON e.id = d.endpoint_id JOIN credentials c ON c.client_id = e.credential_id
        WHERE d.event_id IN (${eventIds.map(() => '?').join(', ')})`),
      eventIds,
    );
    return rows.map((r) => ({
      eventId: String(r.event_id),
      endpointId: String(r.endpoint_id),
      type: String(r.type),
      clientId: Number(r.client_id),
      count: Number(r.count),
      createdAt: readTime(r.created_at as Date | string)!,
      attempts: Number(r.attempts),
      lockToken: String(r.lock_token),
      url: String(r.url),
      allowPrivate: Boolean(r.allow_private),
      secret: String(r.secret),
      previousSecret: (r.previous_secret as string | null) ?? null,
      previousSecretUntil: readTime((r.previous_secret_until as Date | string | null) ?? null),
      entitled: readsClientVisits({ scopes: String(r.scopes), client_ids: String(r.client_ids) }, Number(r.client_id)),
    }));
  }

  /** An event its endpoint's credential may no longer be told of: it leaves the outbox unsent. */
  async withdraw(d: ClaimedDelivery): Promise<void> {
    await inTransaction(this.db, (tx) => this.run(tx, 'DELETE FROM webhook_deliveries WHERE event_id = ? AND lock_token = ?', [d.eventId, d.lockToken]));
  }

  /*
   * The outcome of an attempt writes the endpoint's row before the event's, the order in which
   * a removal (removeEndpoint) and an import (recordVisitChanges) take them: taking the event
   * first, a removal of its endpoint meanwhile held the endpoint and waited for the event, and
   * PostgreSQL ended one of the two (deadlock detected).
   */

  /** A receiver took the event: it leaves the outbox, and the endpoint is healthy again. */
  async delivered(d: ClaimedDelivery, at: Date): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      await this.run(tx, 'UPDATE webhook_endpoints SET last_delivery_at = ?, failing_since = NULL WHERE id = ?', [this.time(at), d.endpointId]);
      await this.run(tx, 'DELETE FROM webhook_deliveries WHERE event_id = ? AND lock_token = ?', [d.eventId, d.lockToken]);
    });
  }

  /** The attempt failed: the event waits until `dueAt` (its claim released) and the endpoint shows the error. */
  async retryLater(d: ClaimedDelivery, dueAt: Date, error: string, at: Date): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      await this.noteError(tx, d.endpointId, error, at, false);
      await this.run(
        tx,
        'UPDATE webhook_deliveries SET due_at = ?, locked_until = NULL, lock_token = NULL, last_error = ? WHERE event_id = ? AND lock_token = ?',
        [this.time(dueAt), error.slice(0, 500), d.eventId, d.lockToken],
      );
    });
  }

  /** The event's retries are over: it leaves the outbox and the endpoint is marked failing (since the first such event). */
  async giveUp(d: ClaimedDelivery, error: string, at: Date): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      await this.noteError(tx, d.endpointId, error, at, true);
      await this.run(tx, 'DELETE FROM webhook_deliveries WHERE event_id = ? AND lock_token = ?', [d.eventId, d.lockToken]);
    });
  }

  private async noteError(tx: EntityManager, endpointId: string, error: string, at: Date, failing: boolean): Promise<void> {
    await this.run(
      tx,
      `UPDATE webhook_endpoints SET last_error = ?, last_error_at = ?${failing ? ', failing_since = COALESCE(failing_since, ?)' : ''} WHERE id = ?`,
      [error.slice(0, 500), this.time(at), ...(failing ? [this.time(at)] : []), endpointId],
    );
  }

  /**
   * Events in the outbox, the first change of the oldest (null when empty) and now by the clock
   * it was dated with (the database's on PostgreSQL, read in the same query): for the metrics,
   * whose age of the oldest is not this replica's clock less the database's.
   */
  async outboxStats(): Promise<{ depth: number; oldest: Date | null; now: Date }> {
    const rows = await this.db.query<{ n: number | string; oldest: Date | string | null; now?: Date }[]>(
      `SELECT COUNT(*) AS n, MIN(created_at) AS oldest${this.postgres ? ', clock_timestamp() AS now' : ''} FROM webhook_deliveries`,
    );
    return { depth: Number(rows[0]?.n ?? 0), oldest: readTime(rows[0]?.oldest ?? null), now: rows[0]?.now ? new Date(rows[0].now) : new Date() };
  }
}
