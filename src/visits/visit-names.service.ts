import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { BodyPool, type PooledBody } from '../common/body-pool.js';
import { NameFragments, PageWriter, StaleNames, type ClientNames, type FeedEnd } from './visit-json.js';
import { VisitsRepository } from './visits.repository.js';

/** Clients whose names are kept at once: a few KB each (a fragment per branch). */
const CLIENTS_KEPT = 2_000;

/** How many times a page reads the names it is rendered with, at most (see render). */
const NAME_READS = 3;

/** The bytes per visit a page's buffer is first sized for: a visit's document is about 4 KB. */
const FIRST_GUESS_BYTES_PER_VISIT = 4_500;

/**
 * The most bytes per visit a page's buffer is sized for, whatever pages came before: a page of
 * larger visits grows its buffer as it is written, and one page of outsized visits does not
 * make every page after it take tens of megabytes up front.
 */
const GUESS_BYTES_PER_VISIT_MAX = 16_384;

/** A rendered page body and, when it lies in a buffer of the pool, that buffer (see PooledBody). */
export interface RenderedBody {
  body: Buffer;
  pooled: PooledBody | null;
  /** The names it was written with. */
  names: ClientNames;
}

/**
 * The names visits are written with (client, brand, branch), per client and data version:
 * every rename moves the client's data version, so names read for a version stay right for it.
 * A page is rendered from the stored documents and these. One reading is kept per client, of
 * the newest version asked for: every import moves the version, and readings kept per version
 * stayed until CLIENTS_KEPT of them were held, a client's old versions never asked for again.
 */
@Injectable()
export class VisitNames {
  private readonly names = new LRUCache<number, { version: number; names: NameFragments }>({ max: CLIENTS_KEPT });
  /** The bytes per visit of the pages of each variant rendered so far (a running mean): the guess for the next page's buffer. */
  private readonly bytesPerVisit = { standard: FIRST_GUESS_BYTES_PER_VISIT, plus: FIRST_GUESS_BYTES_PER_VISIT };

  constructor(
    private readonly repo: VisitsRepository,
    /** Where page bodies are written: buffers of pages sent before (see BodyPool). */
    private readonly pool: BodyPool,
  ) {}

  /** How many readings of names are kept: one per client at most. */
  get kept(): number {
    return this.names.size;
  }

  /**
   * The body of a page of up to `take` visits, which `read` writes into the page it is given
   * and closes with the feed's end it gives back (undefined for a page of /visits). Names are
   * read once per data version. If a visit's branch is not among them (written after they were
   * read, within the same version as far as this replica could tell), they are read again and
   * the page with them: up to NAME_READS times, so that a page read while branches are being
   * added still finds names at least as new as its visits.
   */
  async render(clientId: number, version: number, plus: boolean, take: number, read: (page: PageWriter) => Promise<FeedEnd | undefined>): Promise<RenderedBody> {
    const kept = this.names.get(clientId);
    let names = kept?.version === version ? kept.names : undefined;
    for (let reads = names === undefined ? 1 : 0; ; reads++) {
      if (names === undefined) {
        names = new NameFragments(await this.read(clientId));
        // A page of an older version (a replica that has not yet learnt the newer) does not
        // take the place of the newer reading, which the next pages ask for.
        const latest = this.names.get(clientId);
        if (latest === undefined || latest.version <= version) this.names.set(clientId, { version, names });
      }
      try {
        return await this.write(names, plus, take, read);
      } catch (error) {
        if (!(error instanceof StaleNames) || reads >= NAME_READS) throw error;
        names = undefined;
      }
    }
  }

  /** The client's names as the database has them now (none, for a client it does not have). */
  async read(clientId: number): Promise<ClientNames> {
    return (await this.repo.names(clientId)) ?? { clientId, clientName: '', brands: new Map(), branches: new Map() };
  }

  /** As render, with the names given (read by the caller) rather than those kept for a data version. */
  renderWith(names: ClientNames, plus: boolean, take: number, read: (page: PageWriter) => Promise<FeedEnd | undefined>): Promise<RenderedBody> {
    return this.write(new NameFragments(names), plus, take, read);
  }

  private async write(names: NameFragments, plus: boolean, take: number, read: (page: PageWriter) => Promise<FeedEnd | undefined>): Promise<RenderedBody> {
    const variant = plus ? 'plus' : 'standard';
    const page = new PageWriter(names, plus, 256 + Math.ceil(take * this.bytesPerVisit[variant] * 1.05), this.pool);
    const body = page.finish(await read(page));
    if (page.count > 0) {
      const guess = this.bytesPerVisit[variant] * 0.75 + (body.length / page.count) * 0.25;
      this.bytesPerVisit[variant] = Math.min(guess, GUESS_BYTES_PER_VISIT_MAX);
    }
    return { body, pooled: page.pooled, names: names.names };
  }
}
