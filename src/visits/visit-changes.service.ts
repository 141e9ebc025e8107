import { createHash } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { EffectiveSelection } from '../auth/entitlements.js';
import { PageTokens } from '../common/page-token.js';
import { positionOf } from '../common/page-token-param.js';
import { ClientDataVersions } from '../clients/data-versions.js';
import { AppConfig } from '../config/app-config.js';
import { changesScope, changesTake, sinceInstant, type ChangesQueryDto } from './dto/changes-query.dto.js';
import { sameNames, StaleNames, type FeedEnd, type PageWriter } from './visit-json.js';
import { VisitNames, type RenderedBody } from './visit-names.service.js';
import { VisitsRepository } from './visits.repository.js';
import type { VisitsVariant } from './visits.service.js';
import { holdOf } from '../common/body-pool.js';
import { ProblemException, ValidationProblem } from '../common/problem.js';

/**
 * How far before `Since` a feed starts. A write is stamped with the time it took its
 * client's lock; one that took it shortly before `Since` and committed after it was not yet
 * visible at `Since`, so it is included. A partner may see a few changes twice, never miss one.
 */
export const SINCE_MARGIN_MS = 5 * 60_000;

/** How many times a feed page is read while renames keep changing the names it shows (see page). */
const FEED_READS = 5;

/** Why a feed page is not given while the client's names keep changing under it. */
const NAMES_CHANGING = "The client's names are being changed; retry after the time in Retry-After.";

/** Why a token further on than the feed is refused (see page). */
export const AFTER_AHEAD_OF_FEED =
  "'after' is further on than the feed: the service's data was restored from an earlier backup. Start again from 'Since' (a time before the backup was taken) and read the feed through.";

/** Why a token given out while the credential could read fewer brands or visit types is refused (see page). */
export const AFTER_BEFORE_WIDENING =
  "'after' was given out when the credential could read fewer brands or visit types than it may now: the visits of those it gained that were written before are not on the feed after it. Start again from 'Since' and read the feed through.";

/** The client's brands where a selection of every brand needs none of them (see page). */
const NO_BRANDS: ReadonlyMap<number, unknown> = new Map();

/** Longest selection a token holds as its lists; a longer one is held as a digest (see selectionMark). */
const SELECTION_MARK_MAX = 300;

/**
 * What a feed token records of the selection its page was read with: the brands (those of the
 * page's client, from `clientBrands`: a credential of several clients lists the others' too,
 * which are none of this feed's) and visit types, e.g. `5,6/MV,OF` (`*` on a side for all). A
 * selection too long to keep in a token is held as a digest (`#…`), which only the same
 * selection matches.
 */
export function selectionMark(selection: Pick<EffectiveSelection, 'brandIds' | 'visitTypes'>, clientBrands: ReadonlyMap<number, unknown>): string {
  const brands = selection.brandIds?.filter((brand) => clientBrands.has(brand));
  const mark = `${brands?.join(',') ?? '*'}/${selection.visitTypes?.join(',') ?? '*'}`;
  return mark.length <= SELECTION_MARK_MAX ? mark : `#${createHash('sha256').update(mark).digest('base64url').slice(0, 22)}`;
}

/**
 * The brands of the client a selection may read now that a token's could not: none when the
 * token's takes in every brand and visit type of it (a credential narrowed since reads on, its
 * entitlement applied on every page); null when it gained what brand ids cannot name (visit
 * types, every brand, or another selection than a token's digest). Tokens of before the mark
 * (a position of one number) are taken as they were.
 */
export function gainedOver(
  mark: string | number | undefined,
  selection: Pick<EffectiveSelection, 'brandIds' | 'visitTypes'>,
  clientBrands: ReadonlyMap<number, unknown>,
): number[] | null {
  if (mark === undefined) return [];
  if (typeof mark !== 'string') return null;
  if (mark.startsWith('#')) return mark === selectionMark(selection, clientBrands) ? [] : null;
  const [brands, types] = mark.split('/');
  if (brands === undefined || types === undefined) return null;
  if (types !== '*') {
    const held = new Set(types.split(','));
    if (selection.visitTypes === null || selection.visitTypes.some((type) => !held.has(type))) return null;
  }
  if (brands === '*') return [];
  if (selection.brandIds === null) return null;
  const held = new Set(brands.split(','));
  return selection.brandIds.filter((brand) => clientBrands.has(brand) && !held.has(String(brand)));
}

/** A page of the change feed, and the token of the page after it. */
export interface ChangesPage {
  body: Buffer;
  after: string;
  /** Releases the caller's hold on the body's buffer once it is no longer used (see VisitsPage.release). */
  release: () => void;
}

@Injectable()
export class VisitChangesService {
  private readonly tokens: PageTokens;

  constructor(
    private readonly repo: VisitsRepository,
    private readonly names: VisitNames,
    private readonly versions: ClientDataVersions,
    private readonly config: AppConfig,
  ) {
    this.tokens = PageTokens.fromConfig(config);
  }

  /**
   * The client's visits written after the point the query names, in the order they were
   * written, each in its current state. The token of the next page holds the last write
   * sequence read, bound to the client, the variant and the query's own filters; an empty page
   * gives back a token at the same point, or with filters at the client's last write (which
   * they did not let through). The rows are those of the effective selection (the
   * query's filters narrowed to what the credential may read), applied on every page.
   */
  async page(query: ChangesQueryDto, variant: VisitsVariant, selection: EffectiveSelection): Promise<ChangesPage> {
    // The query's rules have read its token: the scope is whole and the position a write sequence.
    const scope = changesScope(query)!;
    const after = positionOf(query);
    const start = after ? Number(after[0]) : await this.sinceStart(query);
    // A token past every write the client has had, or between the blocks of numbers its writes
    // took, was issued before the database was restored from an earlier backup: the writes it
    // passed after the backup are gone (a partner's copy holds them still), and reading on
    // from it would never tell.
    if (after && !(await this.repo.gaveOutFeedPosition(selection.clientId, start))) throw new ValidationProblem([AFTER_AHEAD_OF_FEED]);
    // A credential given more brands or visit types since the token was given out: the visits
    // of those written before it are behind the token, and reading on would never show them.
    // (Brands of the credential's other clients are none of this feed's.)
    // Only a token that records a selection is judged, against the client's brands as they are
    // now; read only for a selection of some brands (every brand, the common case, needs none).
    if (after && after.length > 1) {
      const brands = selection.brandIds === null ? NO_BRANDS : (await this.names.read(selection.clientId)).brands;
      const gained = gainedOver(after[1], selection, brands);
      if (gained === null || gained.length > 0) throw new ValidationProblem([AFTER_BEFORE_WIDENING]);
    }
    const version = (await this.versions.current(selection.clientId)) ?? 0;
    const plus = variant === 'plus';
    const take = changesTake(query, this.config.VISITS_TAKE_MAX);
    let next = '';
    const filtered = selection.brandIds !== null || selection.visitTypes !== null;
    const read = async (page: PageWriter): Promise<FeedEnd> => {
      // Read before the page: every visit up to it is visible to the page's queries. A filtered
      // page reads its departures and its visits in two statements, each up to the head, so
      // that both see the same writes: an import committed between them (a visit out at one
      // sequence, another in at the next) would otherwise put the visit in on the page and its
      // companion's departure, read before, behind the page's token for good.
      const head = filtered ? await this.repo.changeHead(selection.clientId) : 0;
      const q = { clientId: selection.clientId, after: start, upTo: filtered ? head : undefined, brandIds: selection.brandIds, visitTypes: selection.visitTypes, take };
      // Visits that left the selection, then the visits in it: a page is the first `take` of both, in write order.
      const departures = await this.repo.departures(q);
      const removed: number[] = [];
      const onPage = new Set<number>();
      let d = 0;
      let items = 0;
      let last = start;
      const removeUpTo = (seq: number): void => {
        for (; d < departures.length && departures[d].seq < seq && items < take; d++, items++) {
          removed.push(departures[d].visitId);
          last = departures[d].seq;
        }
      };
      await this.repo.changes({ ...q, plus }, (row) => {
        const seq = Number(row.change_seq);
        removeUpTo(seq);
        if (items >= take) return;
        page.add(row);
        onPage.add(Number(row.id));
        last = seq;
        items++;
      });
      if (items < take) removeUpTo(Infinity);
      // A page short of Take holds every change of the selection up to the head: the next starts
      // there, not at the last visit the filters let through (a filter that lets none through
      // would otherwise have every poll scan the client's writes from where it began).
      if (items < take) last = Math.max(last, head);
      next = this.tokens.encode(scope, [last, selectionMark(selection, page.names.names.brands)]);
      // A visit moved back in after its departure was read is on the page in its current state.
      return { removed: removed.filter((id) => !onPage.has(id)), after: next };
    };
    // The names are those of the data version read before the rows, which may lag (a notified
    // version). A rename rewrites the visits that show the name, in its own transaction: one
    // committed before the rows were read put its visits on the page with the names of before,
    // the token passed them, and a partner's copy kept the old name for good. So the names are
    // read again after the rows, and while they differ the page is read again with them.
    // Names that keep changing (renames one after another) get a 503 rather than a page whose
    // token would pass visits written with names of before.
    let rendered: RenderedBody | null = await this.names.render(selection.clientId, version, plus, take, read);
    for (let reads = 1; ; reads++) {
      const now = await this.names.read(selection.clientId);
      if (rendered && sameNames(rendered.names, now)) return { body: rendered.body, after: next, release: holdOf(rendered.pooled) };
      if (rendered) holdOf(rendered.pooled)();
      if (reads >= FEED_READS) throw new ProblemException(503, NAMES_CHANGING, { headers: { 'Retry-After': '1' } });
      // A visit of a branch added since `now` was read: read the names again (see VisitNames.render).
      rendered = await this.names.renderWith(now, plus, take, read).catch((error: unknown) => {
        if (error instanceof StaleNames) return null;
        throw error;
      });
    }
  }

  private sinceStart(query: ChangesQueryDto): Promise<number> {
    // The query's rules have read Since already: here it is a valid date-time.
    const since = sinceInstant(query.Since!, this.config.RESULTS_TIMEZONE)!;
    return this.repo.changesStart(query.SvcClientId, new Date(since.getTime() - SINCE_MARGIN_MS));
  }
}
