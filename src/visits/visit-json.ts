import { PooledBody, type BodyPool } from '../common/body-pool.js';
import { ByteWriter } from '../common/byte-writer.js';

const text = (value: string | null | undefined): string => (value === null || value === undefined ? 'null' : JSON.stringify(value));
const number = (value: number | string | null): string => (value === null ? 'null' : JSON.stringify(Number(value)));
const flag = (value: boolean | number | null | undefined): string =>
  value === null || value === undefined ? 'null' : value === true || value === 1 ? 'true' : 'false';

/** A visit's own fields, as an import stores them (see Visit). */
export interface VisitFields {
  visitType: string;
  questionnaireType: string;
  visitScore: number;
  recommendScore: number | null;
  recommendComment: string | null;
  visitDateTime: string;
  modificationDate: string;
  visitSource: string | null;
  /** The sections array as validated JSON text: copied in as it is. */
  sections: string;
  guestId: string | null;
  optInContactByEmail: boolean | number | null;
  optInJoinMarketing: boolean | number | null;
}

/** The two stored parts of a visit's JSON (see VisitDocument). */
export interface VisitDocumentParts {
  standard: Buffer;
  plus: Buffer;
}

/**
 * Renders the part of a visit's JSON that is the visit's own, once, when it is written:
 * `standard` runs from `,"visitType":` to the end of the sections, `plus` holds `guestId` and
 * `optIns`. A page puts the visit id and the names in front and closes the object.
 */
export function renderVisitDocument(v: VisitFields): VisitDocumentParts {
  const standard =
    `,"visitType":${text(v.visitType)},"questionnaireType":${text(v.questionnaireType)}` +
    `,"visitScore":${number(v.visitScore)},"recommendScore":${number(v.recommendScore)}` +
    `,"recommendComment":${text(v.recommendComment)},"visitDateTime":${text(v.visitDateTime)}` +
    `,"modificationDate":${text(v.modificationDate)},"visitSource":${text(v.visitSource)},"sections":${v.sections}`;
  const plus =
    `,"guestId":${text(v.guestId)},"optIns":{"contactByEmail":${flag(v.optInContactByEmail)}` +
    `,"joinMarketing":${flag(v.optInJoinMarketing)}}`;
  return { standard: Buffer.from(standard, 'utf8'), plus: Buffer.from(plus, 'utf8') };
}

/** A visit's own fields as columns of the visits table (drivers differ in flag types). */
export interface VisitColumns {
  visit_type: string;
  questionnaire_type: string;
  visit_score: number;
  recommend_score: number | null;
  recommend_comment: string | null;
  visit_date_time: string;
  modification_date: string;
  visit_source: string | null;
  sections: string;
  guest_id: string | null;
  opt_in_contact_by_email: boolean | number | null;
  opt_in_join_marketing: boolean | number | null;
}

/** The document of a visit read from (or written straight into) the visits table's columns. */
export function renderStoredVisit(row: VisitColumns): VisitDocumentParts {
  return renderVisitDocument({
    visitType: row.visit_type,
    questionnaireType: row.questionnaire_type,
    visitScore: row.visit_score,
    recommendScore: row.recommend_score,
    recommendComment: row.recommend_comment,
    visitDateTime: row.visit_date_time,
    modificationDate: row.modification_date,
    visitSource: row.visit_source,
    sections: row.sections,
    guestId: row.guest_id,
    optInContactByEmail: row.opt_in_contact_by_email,
    optInJoinMarketing: row.opt_in_join_marketing,
  });
}

/**
 * A row of a page as the database returns it: the visit's place and its stored document, read
 * as text (the stored bytes are UTF-8; see VisitsRepository.rows).
 */
export interface DocumentRow {
  id: number | string;
  brand_id: number | null;
  branch_id: string;
  standard: string;
  /** Read for plus pages only. */
  plus?: string;
}

/** The names a client's visits are written with, as they are now. */
export interface ClientNames {
  clientId: number;
  clientName: string;
  /** Brand id to its name. */
  brands: ReadonlyMap<number, string>;
  /** Branch id to its code and name. */
  branches: ReadonlyMap<string, { code: string | null; name: string }>;
}

/** Whether two readings of a client's names are the same: its name, and every brand's and branch's. */
export function sameNames(a: ClientNames, b: ClientNames): boolean {
  if (a.clientId !== b.clientId || a.clientName !== b.clientName || a.brands.size !== b.brands.size || a.branches.size !== b.branches.size) return false;
  for (const [id, name] of a.brands) if (b.brands.get(id) !== name) return false;
  for (const [id, branch] of a.branches) {
    const other = b.branches.get(id);
    if (other?.code !== branch.code || other.name !== branch.name) return false;
  }
  return true;
}

/**
 * The bytes between a visit's id and its own fields, per brand and branch: `,"clientId":...,
 * "clientName":...,"brandName":...,"branchId":...,"branchCode":...,"branchName":...`. Made once
 * per brand and branch and kept as long as the names are (one data version of the client).
 */
export class NameFragments {
  private readonly fragments = new Map<string, Buffer>();
  private readonly head: string;

  constructor(readonly names: ClientNames) {
    this.head = `,"clientId":${number(names.clientId)},"clientName":${text(names.clientName)}`;
  }

  /**
   * The fragment, or undefined when the branch or the brand is not among the names: they are
   * older than the visit (a brand added and a branch moved to it since they were read).
   */
  of(brandId: number | null, branchId: string): Buffer | undefined {
    const key = `${brandId ?? ''}|${branchId}`;
    let fragment = this.fragments.get(key);
    if (fragment === undefined) {
      const branch = this.names.branches.get(branchId);
      const brandName = brandId === null ? null : this.names.brands.get(brandId);
      if (!branch || brandName === undefined) return undefined;
      fragment = Buffer.from(
        `${this.head},"brandName":${text(brandName)},"branchId":${text(branchId)}` +
          `,"branchCode":${text(branch.code)},"branchName":${text(branch.name)}`,
        'utf8',
      );
      this.fragments.set(key, fragment);
    }
    return fragment;
  }
}

/** Thrown when a page's visit has a branch its names do not know: the caller reads the names again. */
export class StaleNames extends Error {}

/**
 * Writes the response body `{ "data": { "visits": [...] } }` row by row, copying each stored
 * document in as it arrives from the database, so that a page's texts die one by one instead
 * of living until the page is whole. With `after`, a page of the change feed: `paging.after`
 * follows the data.
 */
/** How a page of the change feed ends: the visits it reports removed, and the token of the next page. */
export interface FeedEnd {
  removed: readonly number[];
  after: string;
}

export class PageWriter {
  private out: ByteWriter | null = null;
  private rows = 0;
  private body: PooledBody | null = null;

  /**
   * `expectedBytes`: the size of the page if it is full, so that a close guess never grows
   * the buffer; it is taken when the first row arrives (an empty page takes nothing), from
   * `pool` when given (see `pooled`).
   */
  constructor(
    /** The names the page is written with. */
    readonly names: NameFragments,
    private readonly plus: boolean,
    private readonly expectedBytes: number,
    private readonly pool?: BodyPool,
  ) {}

  /** After finish: the pool's buffer the body lies in, for its holders to give back; null without a pool or for an empty page. */
  get pooled(): PooledBody | null {
    return this.body;
  }

  /** The visits written so far. */
  get count(): number {
    return this.rows;
  }

  /** Appends a visit; throws StaleNames when its branch or brand is not among the names. */
  add(row: DocumentRow): void {
    const fragment = this.names.of(row.brand_id, row.branch_id);
    if (!fragment) throw new StaleNames(`branch ${row.branch_id} or brand ${row.brand_id} is not among the names read`);
    let out = this.out;
    if (out === null) out = this.out = new ByteWriter(this.expectedBytes, this.pool).text('{"data":{"visits":[{"visitId":');
    else out.text(',{"visitId":');
    out.text(number(row.id)).bytes(fragment).text(row.standard);
    if (this.plus) out.text(row.plus!);
    out.text('}');
    this.rows++;
  }

  /**
   * The body, closed after the visits written: a page of /visits, or with `feed` a page of the
   * change feed, with the visits it reports removed and the token of the next page.
   */
  finish(feed?: FeedEnd): Buffer {
    const end =
      feed === undefined
        ? ']}}'
        : `],"removed":[${feed.removed.map((id) => `{"visitId":${number(id)}}`).join(',')}]},"paging":{"after":${JSON.stringify(feed.after)}}}`;
    if (this.out === null) return Buffer.from(`{"data":{"visits":[${end}`, 'utf8');
    const body = this.out.text(end).result();
    if (this.pool) this.body = new PooledBody(this.pool, this.out.whole);
    return body;
  }
}
