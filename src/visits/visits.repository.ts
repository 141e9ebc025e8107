import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, type EntityManager } from 'typeorm';
import { VisitDeparture } from './entities/visit-departure.entity.js';
import { VisitDocument } from './entities/visit-document.entity.js';
import { Visit } from './entities/visit.entity.js';
import { databaseNow } from '../database/database-clock.js';
import { PostgresRows } from '../database/postgres-rows.js';
import { SqliteRows } from '../database/sqlite-rows.js';
import { sqliteTimestamp } from '../database/sqlite-timestamp.js';
import { lockClients } from '../clients/data-version.js';
import { inTransaction, movesDataVersion } from '../database/transaction.js';
import { upsertRows } from '../database/upsert.js';
import { renderVisitDocument, type ClientNames, type DocumentRow } from './visit-json.js';
import { WebhookOutbox } from '../webhooks/webhook-outbox.js';
import type { ChangedVisit } from '../webhooks/webhook-outbox.js';

/** What an import compares to decide whether a re-imported visit changed. */
export type StoredVisit = Pick<Visit, 'id' | 'clientId' | 'modificationDate'> & { fingerprint: string };

/** The fields whose change moves a visit's modificationDate. */
export function visitFingerprint(v: Omit<Visit, 'modificationDate' | 'id' | 'completedAt'>): string {
  return JSON.stringify([
    v.clientId,
    v.brandId,
    v.branchId,
    v.visitType,
    v.questionnaireType,
    v.visitScore,
    v.recommendScore,
    v.recommendComment,
    v.visitDateTime,
    v.visitSource,
    v.sections,
    v.guestId,
    v.optInContactByEmail,
    v.optInJoinMarketing,
  ]);
}

/** The stored document of a visit being written. */
export function visitDocument(visit: Visit): VisitDocument {
  const { standard, plus } = renderVisitDocument(visit);
  return Object.assign(new VisitDocument(), { visitId: visit.id, branchId: visit.branchId, standard, plus });
}

/** A row's place in the order of pages: the page after it starts with the next row. */
export interface PagePosition {
  visitDateTime: string;
  id: number | string;
}

/** The visits a query selects, in the order visitDateTime, visitId. */
export interface VisitSelection {
  clientId: number;
  /** First local date, inclusive. */
  from: string;
  /** Day after the last local date: the range is [from, until). */
  until: string;
  /** Only these brands (an empty list selects nothing); null for any brand. */
  brandIds: readonly number[] | null;
  /** Only these visit types (an empty list selects nothing); null for any type. */
  visitTypes: readonly string[] | null;
}

/** A selection that no row can match: it is answered without asking the database. */
function selectsNothing(q: Pick<VisitSelection, 'brandIds' | 'visitTypes'>): boolean {
  return q.brandIds?.length === 0 || q.visitTypes?.length === 0;
}

/** One page of a selection: `take` rows after passing over `skip`, counted from `after` when given. */
export interface VisitPageQuery extends VisitSelection {
  /** A row of the selection the page starts after (instead of its first row). */
  after?: PagePosition;
  skip: number;
  take: number;
  plus: boolean;
}

/** A page of the change feed: visits written after the sequence number `after`. */
export interface ChangesPageQuery {
  clientId: number;
  after: number;
  /**
   * The last write sequence to read (a head read before the page), or undefined for all: the
   * two reads of a filtered page, its departures and its visits, then see the same writes.
   */
  upTo?: number;
  /** Only these brands; null for all. */
  brandIds: readonly number[] | null;
  /** Only these visit types; null for all. */
  visitTypes: readonly string[] | null;
  take: number;
  plus: boolean;
}

export interface ChangeRow extends DocumentRow {
  change_seq: number | string;
}

@Injectable()
export class VisitsRepository {
  private readonly postgres: boolean;
  private readonly sqlCache = new Map<string, string>();
  /** The document columns of pages, by variant, read as text (see `rows`). */
  private readonly documents: Record<'standard' | 'plus', string>;
  /**
   * Reads the rows of page queries one by one, each handed on before the next is read (SQLite)
   * or as it arrives (PostgreSQL), so that a document's text dies young in V8's new space
   * instead of a page's 4 MB of texts outliving it. Their documents (the columns of
   * `this.documents`, from the table aliased `d`) arrive as text: the same UTF-8 as the stored
   * bytes (see VisitDocument), which the page writer copies alike. Bytes would cost more on
   * both databases: PostgreSQL sends bytea hex-encoded, twice the bytes on the wire and a
   * decoding per document; SQLite gives a blob as a Buffer of its own, malloc'ed outside V8's
   * heap, which fragments the process's memory and drives full collections. The order is the
   * statement's: its outer ORDER BY is the order of the page's ids, which both databases step
   * through (SQLite as a co-routine, PostgreSQL as the outer side of a nested loop), so neither
   * sorts the documents. See docs/decisions.md ("Visits").
   */
  private readonly rows: SqliteRows | PostgresRows;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly webhooks: WebhookOutbox,
  ) {
    this.postgres = db.options.type === 'postgres';
    const columns = (names: string[]): string =>
      names.map((c) => (this.postgres ? `convert_from(d.${c}, 'UTF8') AS ${c}` : `CAST(d.${c} AS TEXT) AS ${c}`)).join(', ');
    this.documents = { standard: columns(['standard']), plus: columns(['standard', 'plus']) };
    this.rows = this.postgres ? new PostgresRows(db) : new SqliteRows(db);
  }

  /**
   * One page in one query, its rows handed to `each` in page order. The inner select finds
   * the page's ids in the index on (client_id, visit_date_time, id, brand_id, visit_type)
   * alone: the range gives the order visitDateTime, visitId (so Skip/Take pages are stable)
   * and the filters are in the index, so the rows Skip passes over are never read. Only the
   * page's own documents are then read: the visit's JSON as rendered when it was written (see
   * VisitDocument).
   */
  async page(q: VisitPageQuery, each: (row: DocumentRow) => void): Promise<void> {
    if (selectsNothing(q)) return;
    const documents = this.documents[q.plus ? 'plus' : 'standard'];
    const sql = this.sqlFor(`page:${q.plus}`, q, (where, p) => {
      return `SELECT page.id, page.visit_date_time, page.brand_id, d.branch_id, ${documents}
        FROM (
          SELECT id, visit_date_time, brand_id FROM visits
          WHERE ${where}
          ORDER BY visit_date_time, id
          LIMIT ${p()} OFFSET ${p()}
        ) page
        JOIN visit_documents d ON d.visit_id = page.id
        ORDER BY page.visit_date_time, page.id`;
    });
    await this.rows.each(sql, [...this.selectionParams(q), q.take, q.skip], each);
  }

  /** The position of the row `count` rows after `after` (or from the selection's start); null past the end. */
  async positionAfter(q: VisitSelection & { after?: PagePosition }, count: number): Promise<PagePosition | null> {
    if (selectsNothing(q)) return null;
    const sql = this.sqlFor('position', q, (where, p) => {
      return `SELECT visit_date_time AS "visitDateTime", id FROM visits
        WHERE ${where}
        ORDER BY visit_date_time, id
        LIMIT 1 OFFSET ${p()}`;
    });
    const rows = await this.db.query<PagePosition[]>(sql, [...this.selectionParams(q), count - 1]);
    return rows[0] ?? null;
  }

  /**
   * The parameters of a selection, in the order of the conditions `sqlFor` writes. With a
   * position, the range starts right after it: it is then the range's only lower bound (the
   * position lies within the range), which both databases seek to in the index.
   */
  private selectionParams(q: VisitSelection & { after?: PagePosition }): unknown[] {
    const params: unknown[] = [q.clientId];
    if (q.after) params.push(q.after.visitDateTime, q.after.id);
    else params.push(`${q.from}T00:00:00`);
    params.push(`${q.until}T00:00:00`);
    params.push(...(q.brandIds ?? []), ...(q.visitTypes ?? []));
    return params;
  }

  /**
   * The statement `write` makes around a selection's conditions, made once per shape. The
   * brand and type lists are `IN` lists on columns of the page index, so a page's ids are
   * still found in the index alone; callers never pass an empty list (see selectsNothing).
   */
  private sqlFor(
    name: string,
    q: VisitSelection & { after?: PagePosition },
    write: (where: string, param: () => string) => string,
  ): string {
    const key = `${name}:${q.after !== undefined}:${q.brandIds?.length ?? '*'}:${q.visitTypes?.length ?? '*'}`;
    let sql = this.sqlCache.get(key);
    if (!sql) {
      let n = 0;
      const p = (): string => (this.postgres ? `$${++n}` : '?');
      const where = [`client_id = ${p()}`];
      where.push(q.after ? `(visit_date_time, id) > (${p()}, ${p()})` : `visit_date_time >= ${p()}`);
      where.push(`visit_date_time < ${p()}`);
      if (q.brandIds) where.push(`brand_id IN (${q.brandIds.map(p).join(', ')})`);
      if (q.visitTypes) where.push(`visit_type IN (${q.visitTypes.map(p).join(', ')})`);
      sql = write(where.join(' AND '), p);
      this.sqlCache.set(key, sql);
    }
    return sql;
  }

  async findStored(ids: number[], tx: EntityManager = this.db.manager): Promise<Map<number, StoredVisit>> {
    const found = new Map<number, StoredVisit>();
    if (ids.length === 0) return found;
    const rows = await tx.getRepository(Visit).findBy({ id: In(ids) });
    for (const row of rows) found.set(row.id, { ...row, fingerprint: visitFingerprint(row) });
    return found;
  }

  /**
   * Inserts or replaces the visits of one batch in one transaction. Each client's visits take
   * the next numbers of the client's write sequence, and the client's data version moves: both
   * in one update of the client's row, whose lock the transaction then holds until it commits.
   * A second writer of the client waits for that lock and so takes later numbers, and commits
   * later: sequences are in commit order per client, and a reader that has seen a number has
   * seen every smaller one. Clients are locked in id order, so two writers never deadlock.
   */
  async upsertBatch(visits: Visit[], settle?: (stored: Map<number, StoredVisit>, now: Date) => Visit[]): Promise<void> {
    if (visits.length === 0) return;
    await inTransaction(this.db, async (tx) => {
      // The clients' locks first, which a branches import moving a branch to another brand
      // takes first too; then each visit takes its branch's brand as it is now, even when the
      // import read the branch before such a move committed. An import then weighs each visit
      // against the one stored when the write is made, handed to `settle`, which gives what to
      // write: a writer that waited for another writer of the client compares with what that
      // one wrote (a branch it moved included), never with what it read before (a re-import
      // moving a modificationDate back over a later one written meanwhile, or writing a visit
      // again that the move already gave its new brand).
      await lockClients(tx, visits.map((v) => v.clientId));
      await this.takeBranchBrands(tx, visits);
      // The time the write is dated by (writeTime), once the locks are held: the visits' changed_at,
      // and the now of the modificationDates a change moves forward.
      const at = await this.writeTime(tx);
      await this.writeBatch(tx, settle ? settle(await this.findStored(visits.map((v) => v.id), tx), at) : visits, at);
    });
  }

  /**
   * Writes the visits of one batch as upsertBatch does, within a transaction the caller holds:
   * each with the brand it has (upsertBatch gives each its branch's, under the clients' locks;
   * a branch move, the branch's new one). `at`: the time the write is dated by (writeTime), when
   * the caller has read it under the locks already.
   */
  async writeBatch(tx: EntityManager, visits: Visit[], at?: Date): Promise<void> {
    if (visits.length === 0) return;
    const byClient = new Map<number, Visit[]>();
    for (const visit of visits) byClient.set(visit.clientId, [...(byClient.get(visit.clientId) ?? []), visit]);
    const clientIds = [...byClient.keys()].sort((a, b) => a - b);
    const lastSequences = new Map<number, number>();
    for (const clientId of clientIds) lastSequences.set(clientId, await this.takeSequence(tx, clientId, byClient.get(clientId)!.length));
    // Stamped once the clients' locks are held: a write that waited for them is not dated
    // from before the wait, where a first feed call with a Since after that date would miss it.
    // On PostgreSQL by the database's clock, which every writer shares: a writer whose own clock
    // is behind (an operator's host that drifted, a virtual machine resumed) dated its visits
    // before a Since that came before them, and a feed started there passed them over.
    const changedAt = at ?? (await this.writeTime(tx));
    const departures: VisitDeparture[] = [];
    const changed: ChangedVisit[] = [];
    for (const clientId of clientIds) {
      const written = byClient.get(clientId)!;
      const last = lastSequences.get(clientId)!;
      written.forEach((visit, i) => {
        visit.changeSeq = last - written.length + 1 + i;
        visit.changedAt = changedAt;
      });
      // Read under the client's lock: no other writer moves these visits meanwhile.
      const before = await this.placesOf(tx, clientId, written);
      for (const visit of written) {
        const was = before.get(visit.id);
        const moved = was !== undefined && (was.brandId !== visit.brandId || was.visitType !== visit.visitType);
        if (moved) {
          departures.push(
            Object.assign(new VisitDeparture(), {
              clientId,
              changeSeq: visit.changeSeq,
              visitId: visit.id,
              ...was,
              newBrandId: visit.brandId,
              newVisitType: visit.visitType,
            }),
          );
        }
        changed.push({ clientId, brandId: visit.brandId, visitType: visit.visitType, before: moved ? was : undefined });
      }
    }
    // The webhook events announcing this write commit, or roll back, with it.
    await this.webhooks.recordVisitChanges(tx, changed, changedAt);
    await upsertRows(tx, Visit, visits, ['id'], { sameOwner: 'clientId', statementRows: 200 });
    await upsertRows(tx, VisitDocument, visits.map(visitDocument), ['visitId'], { statementRows: 200 });
    for (let i = 0; i < departures.length; i += 200) await tx.getRepository(VisitDeparture).insert(departures.slice(i, i + 200));
  }

  /** The ids of the client's visits (of one brand, or of one branch, when named), in id order. */
  async visitIdsOf(tx: EntityManager, of: { clientId: number; brandId?: number; branchId?: string }): Promise<number[]> {
    const params: (number | string)[] = [of.clientId];
    const at = (): string => (this.postgres ? `$${params.length}` : '?');
    let sql = `SELECT id FROM visits WHERE client_id = ${at()}`;
    if (of.brandId !== undefined) {
      params.push(of.brandId);
      sql += ` AND brand_id = ${at()}`;
    }
    if (of.branchId !== undefined) {
      params.push(of.branchId);
      sql += ` AND branch_id = ${at()}`;
    }
    const rows = await tx.query<{ id: number | string }[]>(`${sql} ORDER BY id`, params);
    return rows.map((row) => Number(row.id));
  }

  /** The ids of a branch's visits whose brand is not `brandId`, in id order: those a move of the branch to that brand rewrites (one pass over the branch's visits). */
  async branchVisitIdsOffBrand(tx: EntityManager, place: { clientId: number; branchId: string; brandId: number | null }): Promise<number[]> {
    const sql = this.postgres
      ? 'SELECT id FROM visits WHERE client_id = $1 AND branch_id = $2 AND brand_id IS DISTINCT FROM $3::integer ORDER BY id'
      : 'SELECT id FROM visits WHERE client_id = ? AND branch_id = ? AND brand_id IS NOT ? ORDER BY id';
    const rows = await tx.query<{ id: number | string }[]>(sql, [place.clientId, place.branchId, place.brandId]);
    return rows.map((row) => Number(row.id));
  }

  /** The visits with these ids, whole, in id order. */
  visitsById(tx: EntityManager, ids: readonly number[]): Promise<Visit[]> {
    return ids.length === 0 ? Promise.resolve([]) : tx.getRepository(Visit).find({ where: { id: In([...ids]) }, order: { id: 'ASC' } });
  }

  /** Gives each visit its branch's brand as stored now (the branches' table is read as SQL: it is another feature's). */
  private async takeBranchBrands(tx: EntityManager, visits: readonly Visit[]): Promise<void> {
    const ids = [...new Set(visits.map((v) => v.branchId))];
    const brands = new Map<string, number | null>();
    for (let i = 0; i < ids.length; i += 500) {
      const chunk = ids.slice(i, i + 500);
      const list = chunk.map((_, n) => (this.postgres ? `$${n + 1}` : '?')).join(', ');
      const rows = await tx.query<{ id: string; brand_id: number | null }[]>(`SELECT id, brand_id FROM branches WHERE id IN (${list})`, chunk);
      for (const row of rows) brands.set(row.id, row.brand_id === null ? null : Number(row.brand_id));
    }
    for (const visit of visits) {
      const brandId = brands.get(visit.branchId);
      if (brandId !== undefined) visit.brandId = brandId;
    }
  }

  /** The brand and visit type the client's stored visits among `visits` have now. */
  private async placesOf(tx: EntityManager, clientId: number, visits: readonly Visit[]): Promise<Map<number, { brandId: number | null; visitType: string }>> {
    const places = new Map<number, { brandId: number | null; visitType: string }>();
    for (let i = 0; i < visits.length; i += 500) {
      const rows = await tx.getRepository(Visit).find({
        select: { id: true, brandId: true, visitType: true },
        where: { clientId, id: In(visits.slice(i, i + 500).map((v) => v.id)) },
      });
      for (const row of rows) places.set(row.id, { brandId: row.brandId, visitType: row.visitType });
    }
    return places;
  }

  /** The time a write is dated with: the database's clock on PostgreSQL (shared by every writer), the process's on SQLite (one host). */
  writeTime(tx: EntityManager): Promise<Date> {
    return databaseNow(tx);
  }

  /**
   * Moves the client's write sequence on by `count` at least, and its data version by one (the
   * database moves the sequence past the clock too: see bumpDataVersion); the new last number,
   * read back, of a block of `count` numbers no one had.
   */
  private async takeSequence(tx: EntityManager, clientId: number, count: number): Promise<number> {
    movesDataVersion(tx);
    const [n, id] = this.postgres ? ['$1', '$2'] : ['?', '?'];
    await tx.query(`UPDATE clients SET change_seq = change_seq + ${n}, data_version = data_version + 1 WHERE id = ${id}`, [count, clientId]);
    const p = this.postgres ? ['$1'] : ['?'];
    const rows = await tx.query<{ s: number | string }[]>(`SELECT change_seq AS s FROM clients WHERE id = ${p[0]}`, [clientId]);
    if (rows[0] === undefined) throw new Error(`client ${clientId} does not exist`);
    return Number(rows[0].s);
  }

  /**
   * One page of the change feed, handed to `each` row by row: the selection's visits whose
   * write sequence is after `after`, in sequence order, found in the index on (client_id,
   * change_seq, brand_id, visit_type).
   */
  async changes(q: ChangesPageQuery, each: (row: ChangeRow) => void): Promise<void> {
    if (selectsNothing(q)) return;
    const params: unknown[] = [q.clientId, q.after];
    let n = 2;
    const p = (): string => (this.postgres ? `$${++n}` : '?');
    const where = [`client_id = ${this.postgres ? '$1' : '?'}`, `change_seq > ${this.postgres ? '$2' : '?'}`];
    if (q.brandIds) {
      where.push(`brand_id IN (${q.brandIds.map(p).join(', ')})`);
      params.push(...q.brandIds);
    }
    if (q.visitTypes) {
      where.push(`visit_type IN (${q.visitTypes.map(p).join(', ')})`);
      params.push(...q.visitTypes);
    }
    if (q.upTo !== undefined) {
      where.push(`change_seq <= ${p()}`);
      params.push(q.upTo);
    }
    const limit = p();
    params.push(q.take);
    const sql = `SELECT page.id, page.brand_id, page.change_seq, d.branch_id, ${this.documents[q.plus ? 'plus' : 'standard']}
      FROM (
        SELECT id, brand_id, change_seq FROM visits WHERE ${where.join(' AND ')}
        ORDER BY change_seq
        LIMIT ${limit}
      ) page
      JOIN visit_documents d ON d.visit_id = page.id
      ORDER BY page.change_seq`;
    await this.rows.each(sql, params, each);
  }

  /**
   * The visits a filtered feed page reports removed: those a write after `after` took out of the
   * selection (from a brand and visit type inside it to one outside), at the last such write of
   * each, and that are still outside it, in sequence order, at most `take`. A visit moved back
   * in is on the feed itself.
   */
  async departures(q: Omit<ChangesPageQuery, 'plus'>): Promise<{ seq: number; visitId: number }[]> {
    if (selectsNothing(q) || (q.brandIds === null && q.visitTypes === null)) return [];
    // Placeholders are numbered, and parameters pushed, in the order the text is written:
    // PostgreSQL numbers them, SQLite takes them by position.
    const params: unknown[] = [];
    let n = 0;
    const p = (value: unknown): string => {
      params.push(value);
      return this.postgres ? `$${++n}` : '?';
    };
    const list = (values: readonly unknown[]): string => values.map(p).join(', ');
    /** The brand and type columns `brand`, `type` inside the selection. */
    const inside = (brand: string, type: string): string =>
      [q.brandIds ? `${brand} IN (${list(q.brandIds)})` : '', q.visitTypes ? `${type} IN (${list(q.visitTypes)})` : ''].filter(Boolean).join(' AND ');
    /** ... or outside it (a brand of none is outside any list of brands). */
    const outside = (brand: string, type: string): string =>
      `(${[q.brandIds ? `(${brand} IS NULL OR ${brand} NOT IN (${list(q.brandIds)}))` : '', q.visitTypes ? `${type} NOT IN (${list(q.visitTypes)})` : '']
        .filter(Boolean)
        .join(' OR ')})`;
    const left = (d: string): string => `${inside(`${d}.brand_id`, `${d}.visit_type`)} AND ${outside(`${d}.new_brand_id`, `${d}.new_visit_type`)}`;
    let departed = `dep.client_id = ${p(q.clientId)} AND dep.change_seq > ${p(q.after)}`;
    if (q.upTo !== undefined) departed += ` AND dep.change_seq <= ${p(q.upTo)}`;
    departed += ` AND ${left('dep')}`;
    const stillOutside = outside('v.brand_id', 'v.visit_type');
    const laterOut = `SELECT 1 FROM visit_departures later WHERE later.client_id = dep.client_id AND later.visit_id = dep.visit_id AND later.change_seq > dep.change_seq AND ${left('later')}`;
    const limit = p(q.take);
    // Both walk the departures in the primary key's order, (client_id, change_seq), check each
    // against its visit and the visit's later departures, and stop once `take` passed.
    // PostgreSQL planned the join form by statistics that cannot see a branch's move: it took
    // "the visit is outside the selection now" for rare (a few per cent of the brand's visits),
    // when after a move it holds for every departure. It then read every departure after the
    // token, looked up each one's visit and later departures, and sorted what passed: 35 to 90
    // ms a page of Take=500 after a move of 18,000 visits (up to 170 ms in production), on
    // every page until the token passed the move; 1.5 to 2.6 ms in this form. Here the
    // departures are a subquery fenced with OFFSET 0, in order, and the checks one subquery
    // that OFFSET 0 keeps from being turned into a join, run on the departures of the selection
    // only. Its cost is reckoned on those alone: as conditions of the departures' own scan the
    // checks were priced on every departure it passes over, and a brand with no departures
    // among many of another brand's priced the statement over the JIT's threshold
    // (jit_above_cost), whose compilation then cost several times the read (10 ms instead of
    // 1.6; 83 instead of 9 in production). The planner prices this form at some 34 per row of
    // Take: under the default threshold (100,000) up to Take=2,900. SQLite runs the join form
    // in that order already (a search of the primary key, each visit looked up by id), and has
    // no OFFSET without LIMIT. The placeholders come in the same order in both texts.
    const sql = this.postgres
      ? `SELECT dep.change_seq AS seq, dep.visit_id AS "visitId" FROM (
          SELECT dep.client_id, dep.change_seq, dep.visit_id FROM visit_departures dep WHERE ${departed} ORDER BY dep.change_seq OFFSET 0
        ) dep
        WHERE EXISTS (SELECT 1 FROM visits v WHERE v.id = dep.visit_id AND ${stillOutside} AND NOT EXISTS (${laterOut}) OFFSET 0)
        ORDER BY dep.change_seq LIMIT ${limit}`
      : `SELECT dep.change_seq AS seq, dep.visit_id AS "visitId" FROM visit_departures dep JOIN visits v ON v.id = dep.visit_id
        WHERE ${departed} AND ${stillOutside} AND NOT EXISTS (${laterOut})
        ORDER BY dep.change_seq LIMIT ${limit}`;
    const rows = await this.db.query<{ seq: number | string; visitId: number | string }[]>(sql, params);
    return rows.map((r) => ({ seq: Number(r.seq), visitId: Number(r.visitId) }));
  }

  /**
   * Where a feed that starts at `since` begins: just before the first write sequence of a visit
   * written at or after it, or at the client's last sequence when none was. Every visit written
   * at or after `since` has a later number, whatever the clocks of the writers said.
   */
  async changesStart(clientId: number, since: Date): Promise<number> {
    const at = this.postgres ? since : sqliteTimestamp(since);
    // The visits written at or after `since` are a range of the index on (client_id,
    // changed_at, change_seq), read in it alone: the cost is that of the writes since `since`,
    // which the retention bounds. PostgreSQL left to itself turns MIN(change_seq) into the
    // first row of the index on (client_id, change_seq) whose changed_at is late enough, as if
    // write times were spread evenly over the sequence; they follow it, so it read every visit
    // written before `since` (the client's whole history, table rows included: 1.0 to 1.2 s at
    // a million visits for a Since 5 to 30 days back). OFFSET 0 keeps the range a subquery of
    // its own, which that rewrite cannot reach; SQLite reads the range as it is.
    const sql = this.postgres
      ? 'SELECT MIN(s) AS s FROM (SELECT change_seq AS s FROM visits WHERE client_id = $1 AND changed_at >= $2 OFFSET 0) since'
      : 'SELECT MIN(change_seq) AS s FROM visits WHERE client_id = ? AND changed_at >= ?';
    const first = await this.db.query<{ s: number | string | null }[]>(sql, [clientId, at]);
    if (first[0]?.s !== null && first[0]?.s !== undefined) return Number(first[0].s) - 1;
    return this.changeHead(clientId);
  }

  /**
   * Whether a change-feed token's position is one this database gave out: not past the client's
   * last write sequence number, and not between two of the blocks of numbers its writes took
   * (SequenceBlock), where only a token of the database as it was before a restore from an
   * earlier backup can be: the writes after the backup that it passed are gone, and the first
   * write after the restore moved the sequence past the clock, over the numbers they had. A
   * number right before a block is the start of a feed from Since (changesStart); a number
   * before every block kept is taken (a token from before blocks were recorded, or older than
   * they are kept).
   */
  async gaveOutFeedPosition(clientId: number, position: number): Promise<boolean> {
    // SQLite numbers its `?` in the order they are written: the position twice, then the client.
    const [at, client, params] = this.postgres ? ['$2', '$1', [clientId, position]] : ['?', '?', [position, position, clientId]];
    const [row] = await this.db.query<{ head: number | string; covering: number | string | null; earlier: number | boolean }[]>(
      `SELECT c.change_seq AS head,
        (SELECT b.first_seq FROM sequence_blocks b WHERE b.client_id = c.id AND b.last_seq >= ${at} ORDER BY b.last_seq LIMIT 1) AS covering,
        EXISTS (SELECT 1 FROM sequence_blocks b WHERE b.client_id = c.id AND b.last_seq < ${at}) AS earlier
      FROM clients c WHERE c.id = ${client}`,
      params,
    );
    if (row === undefined || position > Number(row.head)) return false;
    return row.covering === null || position >= Number(row.covering) - 1 || !row.earlier;
  }

  /**
   * The client's last write sequence number, committed with the visits that took it and every
   * smaller one (see upsertBatch): a feed read after this has seen every visit up to it.
   */
  async changeHead(clientId: number): Promise<number> {
    const head = await this.db.query<{ s: number | string }[]>(`SELECT change_seq AS s FROM clients WHERE id = ${this.postgres ? '$1' : '?'}`, [clientId]);
    return head[0] === undefined ? 0 : Number(head[0].s);
  }

  /** The names a client's visits are written with: its own, its brands' and its branches'. */
  async names(clientId: number): Promise<ClientNames | null> {
    const p = this.postgres ? '$1' : '?';
    const [client] = await this.db.query<{ name: string }[]>(`SELECT name FROM clients WHERE id = ${p}`, [clientId]);
    if (!client) return null;
    const brands = await this.db.query<{ id: number; name: string }[]>(`SELECT id, name FROM brands WHERE client_id = ${p}`, [clientId]);
    const branches = await this.db.query<{ id: string; code: string | null; name: string }[]>(
      `SELECT id, branch_code AS code, name FROM branches WHERE client_id = ${p}`,
      [clientId],
    );
    return {
      clientId,
      clientName: client.name,
      brands: new Map(brands.map((b) => [Number(b.id), b.name])),
      branches: new Map(branches.map((b) => [b.id, { code: b.code, name: b.name }])),
    };
  }
}
