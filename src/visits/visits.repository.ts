import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, type EntityManager } from 'typeorm';
import { VisitDocument } from './entities/visit-document.entity.js';
import { Visit } from './entities/visit.entity.js';
import { SqliteStatements } from '../database/sqlite-statements.js';
import { inTransaction, movesDataVersion } from '../database/transaction.js';
import { renderVisitDocument, StaleNames, type ClientNames, type DocumentRow, type NameFragments, type PageWriter } from './visit-json.js';
import { WebhookOutbox } from '../webhooks/webhook-outbox.js';

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
  /** Only these brands; null for all. */
  brandIds: readonly number[] | null;
  /** Only these visit types; null for all. */
  visitTypes: readonly string[] | null;
  take: number;
  plus: boolean;
}

/** The row of a statement that writes a page's visits (see VisitsRepository.joined). */
interface JoinedRow {
  /** The whole body of a page, or the visits joined with commas (null when there are none). */
  value: Buffer | null;
  count: number;
}

/** What a statement of VisitsRepository.joined gives: a page's whole body, or its visits joined with commas. */
type JoinedValue = 'body' | 'visits';

/** The largest page SQLite writes joined in SQL; larger ones are written from their rows (see VisitsRepository.joinsInSql). */
export const SQLITE_JOINED_VISITS_MAX = 200;

/** The bytes around a page's visits (see PageWriter). */
const PAGE_START = '{"data":{"visits":[';
const PAGE_END = ']}}';

/** How the SQLite driver stores a Date (UTC, milliseconds), so that stored and given times compare as text. */
function sqliteTimestamp(at: Date): string {
  return at.toISOString().replace('T', ' ').replace('Z', '');
}

@Injectable()
export class VisitsRepository {
  private readonly postgres: boolean;
  private readonly sqlCache = new Map<string, string>();
  /** SQLite's statements that write a page's visits (see joined); null on PostgreSQL. */
  private readonly sqlite: SqliteStatements | null;
  /** The names of the page SQLite is writing, for its `visit_names` function. */
  private namesInUse: NameFragments | null = null;

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    private readonly webhooks: WebhookOutbox,
  ) {
    this.postgres = db.options.type === 'postgres';
    this.sqlite = this.postgres ? null : new SqliteStatements(db, { visit_names: (brandId, branchId) => this.nameFragment(brandId, branchId) });
  }

  /**
   * One page in one query, written into `into`. The inner select finds the page's ids in the
   * index on (client_id, visit_date_time, id, brand_id, visit_type) alone: the range gives the
   * order visitDateTime, visitId (so Skip/Take pages are stable) and the filters are in the
   * index, so the rows Skip passes over are never read. Only the page's own documents are
   * then read: the visit's JSON as rendered when it was written (see VisitDocument).
   */
  async page(q: VisitPageQuery, into: PageWriter): Promise<void> {
    if (selectsNothing(q)) return;
    const joined = this.joinsInSql(q.take);
    const sql = this.sqlFor(`page:${q.plus}:${joined}`, q, (where, p) => {
      const ids = `SELECT id, visit_date_time, brand_id FROM visits
          WHERE ${where}
          ORDER BY visit_date_time, id
          LIMIT ${p()} OFFSET ${p()}`;
      return joined ? this.joined(ids, q.plus, 'body', '') : this.rows(ids, q.plus, ', page.visit_date_time');
    });
    const params = [...this.selectionParams(q), q.take, q.skip];
    if (joined) {
      this.writeJoined(sql, params, into, 'body');
      return;
    }
    type PageRow = DocumentRow & { visit_date_time: string };
    const order = (a: PageRow, b: PageRow): number =>
      a.visit_date_time < b.visit_date_time ? -1 : a.visit_date_time > b.visit_date_time ? 1 : Number(a.id) - Number(b.id);
    await this.readRows<PageRow>(sql, params, order, (row) => into.add(row));
  }

  /**
   * Whether a page of `take` visits is joined in SQL (`joined`) rather than read row by row
   * (`rows`): on SQLite, pages of up to SQLITE_JOINED_VISITS_MAX visits. SQLite joins a page
   * by growing one buffer; above the allocator's mmap threshold (1 MB, see Dockerfile) every
   * step of that growth, and the Buffer the driver copies the page into, is a fresh mapping
   * faulted in page by page, and V8 counts each such Buffer toward starting a full collection:
   * 1000-visit pages measured 15 requests/s joined against 30 read row by row, 100-visit pages
   * (430 KB) faster joined (README "Performance", item 21). On PostgreSQL `string_agg` over the
   * joined names was measured three times slower than reading the rows (same item).
   */
  private joinsInSql(take: number): boolean {
    return this.sqlite !== null && take <= SQLITE_JOINED_VISITS_MAX;
  }

  /**
   * The statement that gives the visits whose ids `ids` selects as rows, their documents as
   * text: the same UTF-8 as the stored bytes, which the page writer copies alike. On SQLite the
   * same CROSS JOIN as `joined`, so the rows come in the order of the ids with nothing sorted;
   * on PostgreSQL they are put in order after reading (`readRows`: sorting in the server would
   * copy the documents), and the documents are asked for with `convert_from` (bytea would come
   * hex-encoded, twice the bytes, decoded again in JavaScript).
   */
  private rows(ids: string, plus: boolean, extra: string): string {
    const columns = plus ? ['standard', 'plus'] : ['standard'];
    const documents = columns.map((c) => (this.postgres ? `convert_from(d.${c}, 'UTF8') AS ${c}` : `CAST(d.${c} AS TEXT) AS ${c}`)).join(', ');
    return `SELECT page.id, page.brand_id, d.branch_id, ${documents}${extra}
        FROM (${ids}) page
        ${this.postgres ? 'JOIN' : 'CROSS JOIN'} visit_documents d ON d.visit_id = page.id`;
  }

  /**
   * Hands the rows of a statement of `rows` to `each` in page order. On SQLite each row is
   * handed on before the next is read, so its text dies young in V8's new space; PostgreSQL's
   * rows arrive together and are sorted here.
   */
  private async readRows<T extends DocumentRow>(sql: string, params: unknown[], order: (a: T, b: T) => number, each: (row: T) => void): Promise<void> {
    if (this.sqlite !== null) return this.sqlite.each<T>(sql, params, each);
    const rows = await this.db.query<T[]>(sql, params);
    rows.sort(order).forEach((row) => each(row));
  }

  /**
   * The statement that writes the visits whose ids (and brands) `ids` selects (its first
   * parameter the client), each as PageWriter.add writes it (the id, the names, the stored
   * document, then `}`), joined with commas in the order `order`: one value a page, which the
   * driver hands over as one Buffer. With `value` 'body' it is the page's whole body, which is
   * sent as it is; 'visits' (the feed, whose body ends with a token made from the rows read)
   * the page writer copies once. Rows each cost a string per document to decode, encode again
   * and collect, in JavaScript; a copy of the page is a second Buffer outside V8's heap, which
   * V8 counts toward starting full collections.
   *
   * SQLite only (see joinsInSql). `visit_names` gives the names' fragment of the page being
   * written (see writeJoined). The CROSS JOIN keeps the page's ids as the outer loop (SQLite
   * never reorders it), stepped through in their order as a co-routine, each document looked
   * up by its key: the visits are joined in page order and nothing is sorted (its query plan
   * has no temporary b-tree).
   */
  private joined(ids: string, plus: boolean, value: JoinedValue, extra: string): string {
    const document = plus ? 'd.standard || d.plus' : 'd.standard';
    const visits = `group_concat('{"visitId":' || page.id || visit_names(page.brand_id, d.branch_id) || ${document} || '}', ',')`;
    const joined = value === 'body' ? `'${PAGE_START}' || coalesce(${visits}, '') || '${PAGE_END}'` : visits;
    return `SELECT CAST(${joined} AS BLOB) AS value, count(*) AS count${extra}
        FROM (${ids}) page
        CROSS JOIN visit_documents d ON d.visit_id = page.id`;
  }

  /**
   * Runs a statement of `joined` with the page's names for `visit_names` (which throws
   * StaleNames for a branch they do not know), and appends its visits to the page; its row.
   */
  private writeJoined<T>(sql: string, params: unknown[], into: PageWriter, value: JoinedValue): JoinedRow & T {
    this.namesInUse = into.names;
    let row: JoinedRow & T;
    try {
      row = this.sqlite!.get<JoinedRow & T>(sql, params)!;
    } finally {
      this.namesInUse = null;
    }
    if (value === 'body') into.addBody(row.value!, row.count);
    else if (row.value !== null) into.addJoined(row.value, row.count);
    return row;
  }

  /** SQLite's `visit_names(brand_id, branch_id)`: the fragment of the names of the page being written. */
  private nameFragment(brandId: unknown, branchId: unknown): Buffer {
    const fragment = this.namesInUse?.of(brandId === null ? null : Number(brandId), String(branchId));
    if (!fragment) throw new StaleNames(`branch ${String(branchId)} is not among the names read`);
    return fragment;
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

  async findStored(ids: number[]): Promise<Map<number, StoredVisit>> {
    const found = new Map<number, StoredVisit>();
    if (ids.length === 0) return found;
    const rows = await this.db.getRepository(Visit).findBy({ id: In(ids) });
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
  async upsertBatch(visits: Visit[]): Promise<void> {
    if (visits.length === 0) return;
    const byClient = new Map<number, Visit[]>();
    for (const visit of visits) byClient.set(visit.clientId, [...(byClient.get(visit.clientId) ?? []), visit]);
    await inTransaction(this.db, async (tx) => {
      const changedAt = new Date();
      for (const clientId of [...byClient.keys()].sort((a, b) => a - b)) {
        const written = byClient.get(clientId)!;
        const last = await this.takeSequence(tx, clientId, written.length);
        written.forEach((visit, i) => {
          visit.changeSeq = last - written.length + 1 + i;
          visit.changedAt = changedAt;
        });
      }
      // The webhook events announcing this write commit, or roll back, with it.
      await this.webhooks.recordVisitChanges(tx, visits, changedAt);
      for (let i = 0; i < visits.length; i += 200) {
        const batch = visits.slice(i, i + 200);
        await tx.getRepository(Visit).upsert(batch, { conflictPaths: ['id'], skipUpdateIfNoValuesChanged: false });
        await tx.getRepository(VisitDocument).upsert(batch.map(visitDocument), { conflictPaths: ['visitId'], skipUpdateIfNoValuesChanged: false });
      }
    });
  }

  /** Moves the client's write sequence on by `count` (and its data version by one); the new last number. */
  private async takeSequence(tx: EntityManager, clientId: number, count: number): Promise<number> {
    const p = this.postgres ? ['$1', '$2'] : ['?', '?'];
    movesDataVersion(tx);
    await tx.query(
      `UPDATE clients SET change_seq = change_seq + ${p[0]}, data_version = data_version + 1 WHERE id = ${p[1]}`,
      [count, clientId],
    );
    const rows = await tx.query<{ s: number | string }[]>(`SELECT change_seq AS s FROM clients WHERE id = ${p[0]}`, [clientId]);
    if (rows[0] === undefined) throw new Error(`client ${clientId} does not exist`);
    return Number(rows[0].s);
  }

  /**
   * One page of the change feed, written into `into`: the selection's visits whose write
   * sequence is after `after`, in sequence order, found in the index on (client_id,
   * change_seq, brand_id, visit_type). The last sequence number written, or null for an
   * empty page.
   */
  async changes(q: ChangesPageQuery, into: PageWriter): Promise<number | null> {
    if (selectsNothing(q)) return null;
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
    const limit = p();
    params.push(q.take);
    const ids = `SELECT id, brand_id, change_seq FROM visits WHERE ${where.join(' AND ')}
        ORDER BY change_seq
        LIMIT ${limit}`;
    if (this.joinsInSql(q.take)) {
      // The body ends with the token of the next page, made from the last number read: the
      // page writer closes it.
      const row = this.writeJoined<{ last: number | null }>(this.joined(ids, q.plus, 'visits', ', max(page.change_seq) AS last'), params, into, 'visits');
      return row.last;
    }
    type ChangeRow = DocumentRow & { change_seq: number | string };
    let last: number | null = null;
    await this.readRows<ChangeRow>(this.rows(ids, q.plus, ', page.change_seq'), params, (a, b) => Number(a.change_seq) - Number(b.change_seq), (row) => {
      into.add(row);
      last = Number(row.change_seq);
    });
    return last;
  }

  /**
   * Where a feed that starts at `since` begins: just before the first write sequence of a visit
   * written at or after it, or at the client's last sequence when none was. Every visit written
   * at or after `since` has a later number, whatever the clocks of the writers said.
   */
  async changesStart(clientId: number, since: Date): Promise<number> {
    const p = this.postgres ? ['$1', '$2'] : ['?', '?'];
    const at = this.postgres ? since : sqliteTimestamp(since);
    const first = await this.db.query<{ s: number | string | null }[]>(
      `SELECT MIN(change_seq) AS s FROM visits WHERE client_id = ${p[0]} AND changed_at >= ${p[1]}`,
      [clientId, at],
    );
    if (first[0]?.s !== null && first[0]?.s !== undefined) return Number(first[0].s) - 1;
    const head = await this.db.query<{ s: number | string }[]>(`SELECT change_seq AS s FROM clients WHERE id = ${p[0]}`, [clientId]);
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
