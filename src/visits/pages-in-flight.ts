import { Injectable } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { BodiesInFlight, heldBytes, NoRoomInTime } from '../common/bodies-in-flight.js';
import { ProblemException } from '../common/problem.js';
import { whenGone } from '../common/response-gone.js';
import { AppConfig } from '../config/app-config.js';
import { dropWhenStalled } from '../common/stalled-connections.js';

/** Bytes per visit assumed before any page was sent (about what a visit with a few sections takes), and the least ever assumed. */
const FIRST_BYTES_PER_VISIT = 4096;

/** The answer to a page request that found no room in time: the service is busy, not broken. */
function pagesBusy(waitSeconds: number): ProblemException {
  return new ProblemException(
    503,
    `The service is writing as many visit pages as it holds and found no room for this one within ${waitSeconds} s; retry after the time in Retry-After.`,
    { headers: { 'Retry-After': '5' } },
  );
}

/**
 * The budget of visit and change-feed page bodies in flight (PAGES_IN_FLIGHT_MB). A request
 * reserves what its page is likely to take (Take times the bytes per visit of the pages sent
 * so far) before the page is read; the page's real body then counts instead. One credential
 * holds at most half of the budget; a request waits at most PAGES_WAIT_SECONDS for room, and
 * a page whose connection takes no bytes for PAGES_STALL_SECONDS is dropped with it.
 */
@Injectable()
export class PagesInFlight {
  private readonly bodies: BodiesInFlight;
  private bytesPerVisit = FIRST_BYTES_PER_VISIT;

  private readonly limit: number;
  private readonly waitSeconds: number;
  private readonly stallMs: number;
  /** Responses whose request waited its time out already: answered 503 at once if they come again. */
  private readonly refused = new WeakSet<ServerResponse>();

  constructor(config: AppConfig) {
    this.limit = config.PAGES_IN_FLIGHT_MB === 0 ? Infinity : config.PAGES_IN_FLIGHT_MB * 1024 * 1024;
    this.bodies = new BodiesInFlight(this.limit);
    this.waitSeconds = config.PAGES_WAIT_SECONDS;
    this.stallMs = config.PAGES_STALL_SECONDS * 1000;
  }

  /**
   * What page body buffers kept for re-use may take (see BodyPool): the budget less the
   * bodies being written. Estimates of pages being read do not count: those pages take their
   * buffers from the kept ones.
   */
  get room(): number {
    return this.limit - this.bodies.carried;
  }

  /**
   * Reads a page of `take` visits once the budget has room for it, then writes it: `write` is
   * given the function to call with the bytes that go out (the body or a compressed form),
   * which count until the response closes. A page not written (a 304, a failure) gives its
   * reservation back. The page read comes with a hold on its body's buffer, released once the
   * response has closed (see PooledBody): by then its bytes are written out or the connection
   * is gone, and `write` has settled, so no compression still reads them.
   *
   * `owner` is the credential asking: what its pages hold counts against its half of the
   * budget. No room within PAGES_WAIT_SECONDS is a 503 (thrown before anything is written).
   */
  async serve<T extends { body: Buffer; release: () => void }>(
    res: ServerResponse,
    take: number,
    owner: string,
    read: () => Promise<T>,
    write: (page: T, sending: (sent: Buffer) => void) => Promise<void>,
  ): Promise<void> {
    if (this.refused.has(res)) throw pagesBusy(this.waitSeconds);
    let slot;
    try {
      slot = await this.bodies.reserve(take * this.bytesPerVisit, { owner, waitMs: this.waitSeconds * 1000 });
    } catch (error) {
      if (!(error instanceof NoRoomInTime)) throw error;
      this.refused.add(res);
      throw pagesBusy(this.waitSeconds);
    }
    let page: T | undefined;
    try {
      page = await read();
      // From here the connection must keep taking the page's bytes: one that takes none for
      // PAGES_STALL_SECONDS is closed, and its body leaves the budget.
      dropWhenStalled(res, this.stallMs);
      // Never below the first figure: pages short of their Take (an empty range asked for with
      // Take=1000, again and again) would teach a figure far below what full pages take, and
      // many of those would then be let in at once.
      if (take > 0 && page.body.length > 0) {
        this.bytesPerVisit = Math.max(FIRST_BYTES_PER_VISIT, Math.round(0.8 * this.bytesPerVisit + (0.2 * heldBytes(page.body)) / take));
      }
      await write(page, (sent) => slot.sending(res, sent));
    } finally {
      slot.cancel();
      if (page !== undefined) whenGone(res, page.release);
    }
  }
}
