import { createHmac } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { holdOf, type PooledBody } from '../common/body-pool.js';
import { addDays } from '../common/clock.js';
import type { EffectiveSelection } from '../auth/entitlements.js';
import { ClientDataVersions } from '../clients/data-versions.js';
import { AppConfig } from '../config/app-config.js';
import type { VisitsQueryDto } from './dto/visits-query.dto.js';
import { VisitNames, type RenderedBody } from './visit-names.service.js';
import { VisitsRepository, type PagePosition, type VisitSelection } from './visits.repository.js';

export type VisitsVariant = 'standard' | 'plus';

/**
 * The page of a query: its dates, Skip and Take. What it selects (client, brands, types) is
 * never taken from the query itself but from its effective selection (see entitlements.ts).
 */
export type VisitsWindow = Pick<VisitsQueryDto, 'FromDate' | 'ToDate' | 'Skip' | 'Take'>;

/** A rendered page and the validator it is served with. */
export interface VisitsPage {
  body: Buffer;
  etag: string;
  /**
   * Releases the caller's hold on the buffer the body lies in, once the body is no longer
   * used (the response that writes it has closed): the buffer may then be written into again
   * (see PooledBody). Called once; not calling it only leaves the buffer to the collector.
   */
  release: () => void;
}

/** A page as rendered: its body's buffer is held by whoever uses the page (see VisitsPage.release). */
interface RenderedPage {
  body: Buffer;
  etag: string;
  pooled: PooledBody | null;
}

/**
 * A render under way and the requests waiting for it. Each of them is given a hold of its own
 * on the body's buffer, all taken as the render ends: a hold of the render's own, released
 * after the waiting requests had taken theirs, was released only once the event loop came
 * round to it, after every other render of the same turn, so that a turn of many pages kept
 * all their buffers from the pool.
 */
interface Rendering {
  page: Promise<RenderedPage>;
  waiters: Waiters;
}

/** The requests waiting for a render, and their holds, one each, taken when the page is rendered. */
interface Waiters {
  count: number;
  holds: (() => void)[];
}

/** A page in the cache, which holds its buffer until it lets the page go. */
interface CachedPage {
  page: RenderedPage;
  release: () => void;
}

/** A hold of the caller's own on a rendered page's buffer. */
function held(page: RenderedPage): VisitsPage {
  return { body: page.body, etag: page.etag, release: holdOf(page.pooled) };
}

/** Rows between two marks of a selection: a page never passes over more than this many. */
export const MARK_STRIDE = 1000;
/** What the marks of every selection take at most, in bytes (a month of a million visits has 1,000 marks). */
export const MARKS_KEPT_BYTES = 20 * 1024 * 1024;
/** What one mark takes: a position, its date-time text and its slot. */
const MARK_BYTES = 100;
/**
 * What a selection's entry takes besides its marks and its key: the entry, its queue's promise
 * and the cache's slots (200,000 entries without a mark took 63 MB, some 330 bytes each with
 * their keys). A selection with fewer rows than MARK_STRIDE keeps no mark, and its entry is
 * all it holds: weighed as one mark, 200,000 of them (short selections asked for past their
 * first 1,000 rows, again at each data version) held 63 MB, not the 20 MB meant.
 */
const SELECTION_BYTES = 280;

/** The bytes an entry of the marks cache is weighed at. */
export function marksWeight(entry: { marks: readonly unknown[] }, key: string): number {
  return SELECTION_BYTES + key.length + entry.marks.length * MARK_BYTES;
}

/**
 * Marks of one selection: marks[k] is the position of row (k + 1) * MARK_STRIDE - 1, the row
 * before offset (k + 1) * MARK_STRIDE. They are found as far as pages have needed them.
 */
interface SelectionMarks {
  marks: PagePosition[];
  /** No row lies MARK_STRIDE rows past the last mark. */
  complete: boolean;
  /** Extensions run one after another: each starts from the last mark the one before found. */
  queue: Promise<void>;
}

@Injectable()
export class VisitsService {
  /** Rendered pages, least recently used out first, within VISITS_CACHE_MB; none when 0. */
  /** Key of the pages' ETags. */
  private readonly etagKey: Buffer;
  private readonly cache: LRUCache<string, CachedPage> | null;
  /** Renders under way: concurrent requests for one page wait for a single render. */
  private readonly rendering = new Map<string, Rendering>();
  /**
   * Every MARK_STRIDE-th position of a selection (per data version), so that a page at any
   * Skip starts from the mark before it by an index seek and passes over fewer than
   * MARK_STRIDE entries, instead of an OFFSET over all the entries before it: without marks,
   * a partner paging with Take=1000 through a month of a million visits (1,000 pages) makes
   * the database pass over half a billion index entries. Each replica finds the marks once per
   * selection, as far as pages need them, in steps of one seek each.
   */
  private readonly marks = new LRUCache<string, SelectionMarks>({
    maxSize: MARKS_KEPT_BYTES,
    sizeCalculation: marksWeight,
  });

  constructor(
    private readonly repo: VisitsRepository,
    private readonly names: VisitNames,
    private readonly versions: ClientDataVersions,
    config: AppConfig,
  ) {
    // The same on every replica (they share the keys), so a page's ETag is too.
    this.etagKey = createHmac('sha256', config.PAGE_TOKEN_KEY ?? config.API_KEY_HASH_KEY).update('visit-page-etags').digest();
    const budget = config.VISITS_CACHE_MB * 1024 * 1024;
    this.cache =
      budget > 0
        ? new LRUCache({
            maxSize: budget,
            maxEntrySize: budget / 4,
            // What the page holds: the whole buffer when its body lies in one of the pool's.
            sizeCalculation: (entry: CachedPage) => entry.page.pooled?.buffer.length ?? entry.page.body.length,
            dispose: (entry: CachedPage) => entry.release(),
          })
        : null;
  }

  /** The bytes the page marks kept are weighed at: at most MARKS_KEPT_BYTES. */
  get marksBytes(): number {
    return this.marks.calculatedSize;
  }

  /** The bytes of the rendered pages kept. */
  get cachedBytes(): number {
    return this.cache?.calculatedSize ?? 0;
  }

  /**
   * One page of the visits a credential may read, in the order visitDateTime, visitId. Every
   * accepted query covers closed days (the dates are before today), so a page only changes
   * when the client's data does: rendered pages and page marks are kept under keys holding
   * the client's data version and the effective selection (brands and types as entitled), so
   * a page rendered for one credential's entitlement never answers another's. The page comes
   * with a hold on its body's buffer, which the caller releases (see VisitsPage.release).
   */
  async page(entitled: EffectiveSelection, window: VisitsWindow, variant: VisitsVariant): Promise<VisitsPage> {
    const version = (await this.versions.current(entitled.clientId)) ?? 0;
    const list = (items: readonly (string | number)[] | null): string => (items === null ? '*' : `[${items.join(',')}]`);
    // The rows a query selects, whatever the page and variant.
    const selectionKey = [entitled.clientId, version, window.FromDate, window.ToDate, list(entitled.brandIds), list(entitled.visitTypes)].join('|');
    const key = [variant, selectionKey, window.Skip, window.Take].join('|');
    const cached = this.cache?.get(key);
    if (cached) return held(cached.page);
    let rendering = this.rendering.get(key);
    if (!rendering) {
      const selection: VisitSelection = {
        clientId: entitled.clientId,
        from: window.FromDate,
        until: addDays(window.ToDate, 1),
        brandIds: entitled.brandIds,
        visitTypes: entitled.visitTypes,
      };
      // The validator names the page's key, not its bytes: worked out once, with the render.
      // Keyed: the key holds the client's data version, which a credential of one brand must not
      // work out (by hashing its own query with guessed versions) to count other brands' writes.
      const etag = `W/"${createHmac('sha256', this.etagKey).update(key).digest('base64url').slice(0, 27)}"`;
      const waiters: Waiters = { count: 0, holds: [] };
      const page = this.render(selection, version, selectionKey, window, variant).then(
        ({ body, pooled }) => {
          // No request joins the render from now on; each one waiting for it gets a hold,
          // taken here before any of them can release its own.
          this.rendering.delete(key);
          for (let i = 0; i < waiters.count; i++) waiters.holds.push(holdOf(pooled));
          const rendered = { body, etag, pooled };
          this.keep(key, rendered);
          return rendered;
        },
        (error: unknown) => {
          this.rendering.delete(key);
          throw error;
        },
      );
      rendering = { page, waiters };
      this.rendering.set(key, rendering);
    }
    const { waiters } = rendering;
    waiters.count++;
    const page = await rendering.page;
    return { body: page.body, etag: page.etag, release: waiters.holds.pop()! };
  }

  /**
   * Puts a page in the cache, which holds its buffer while it keeps it. A body filling less
   * than eight ninths of its buffer is kept as a copy of its own size instead, so that the
   * cache holds little memory it does not count.
   */
  private keep(key: string, page: RenderedPage): void {
    if (this.cache === null) return;
    const loose = page.pooled !== null && page.pooled.buffer.length - page.body.length > page.body.length / 8;
    const kept = loose ? { ...page, body: Buffer.from(page.body), pooled: null } : page;
    const release = holdOf(kept.pooled);
    this.cache.set(key, { page: kept, release });
    // A page larger than the cache takes for one entry is not kept (nor disposed of).
    if (this.cache.peek(key)?.page !== kept) release();
  }

  private async render(
    selection: VisitSelection,
    version: number,
    selectionKey: string,
    window: VisitsWindow,
    variant: VisitsVariant,
  ): Promise<RenderedBody> {
    const plus = variant === 'plus';
    const start = await this.pageStart(selectionKey, selection, window.Skip);
    return this.names.render(selection.clientId, version, plus, window.Take, async (page) => {
      await this.repo.page({ ...selection, ...start, take: window.Take, plus }, (row) => page.add(row));
      return undefined;
    });
  }

  /** Where the page at `skip` starts: after the nearest mark before it, or from the start. */
  private async pageStart(key: string, selection: VisitSelection, skip: number): Promise<{ after?: PagePosition; skip: number }> {
    const needed = Math.floor(skip / MARK_STRIDE);
    if (needed === 0) return { skip };
    let entry = this.marks.get(key);
    if (!entry) {
      entry = { marks: [], complete: false, queue: Promise.resolve() };
      this.marks.set(key, entry);
    }
    if (entry.marks.length < needed && !entry.complete) {
      const found = entry;
      const extension = entry.queue.then(() => this.extendMarks(found, selection, needed));
      // A failed extension fails its own request only; the next one starts from the marks found.
      entry.queue = extension.catch(() => undefined);
      await extension;
      // Stored again so that the cache counts the marks it now holds.
      if (this.marks.get(key) === entry) this.marks.set(key, entry);
    }
    const known = Math.min(needed, entry.marks.length);
    if (known === 0) return { skip };
    return { after: entry.marks[known - 1], skip: skip - known * MARK_STRIDE };
  }

  private async extendMarks(entry: SelectionMarks, selection: VisitSelection, needed: number): Promise<void> {
    while (entry.marks.length < needed && !entry.complete) {
      const mark = await this.repo.positionAfter({ ...selection, after: entry.marks.at(-1) }, MARK_STRIDE);
      if (mark) entry.marks.push(mark);
      else entry.complete = true;
    }
  }
}
