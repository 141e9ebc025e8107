import { Injectable } from '@nestjs/common';
import type { ServerResponse } from 'node:http';
import { BodiesInFlight, heldBytes } from '../common/bodies-in-flight.js';
import { AppConfig } from '../config/app-config.js';

/** Bytes per visit assumed before any page was sent: about what a visit with a few sections takes. */
const FIRST_BYTES_PER_VISIT = 4096;

/**
 * The budget of visit and change-feed page bodies in flight (PAGES_IN_FLIGHT_MB). A request
 * reserves what its page is likely to take (Take times the bytes per visit of the pages sent
 * so far) before the page is read; the page's real body then counts instead.
 */
@Injectable()
export class PagesInFlight {
  private readonly bodies: BodiesInFlight;
  private bytesPerVisit = FIRST_BYTES_PER_VISIT;

  private readonly limit: number;

  constructor(config: AppConfig) {
    this.limit = config.PAGES_IN_FLIGHT_MB === 0 ? Infinity : config.PAGES_IN_FLIGHT_MB * 1024 * 1024;
    this.bodies = new BodiesInFlight(this.limit);
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
   */
  async serve<T extends { body: Buffer; release: () => void }>(
    res: ServerResponse,
    take: number,
    read: () => Promise<T>,
    write: (page: T, sending: (sent: Buffer) => void) => Promise<void>,
  ): Promise<void> {
    const slot = await this.bodies.reserve(take * this.bytesPerVisit);
    let page: T | undefined;
    try {
      page = await read();
      if (take > 0 && page.body.length > 0) this.bytesPerVisit = Math.round(0.8 * this.bytesPerVisit + (0.2 * heldBytes(page.body)) / take);
      await write(page, (sent) => slot.sending(res, sent));
    } finally {
      slot.cancel();
      if (page !== undefined) {
        if (res.closed) page.release();
        else res.once('close', page.release);
      }
    }
  }
}
