import { Injectable } from '@nestjs/common';
import { BodiesInFlight, type InFlightSlot } from '../common/bodies-in-flight.js';
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

  constructor(config: AppConfig) {
    this.bodies = new BodiesInFlight(config.PAGES_IN_FLIGHT_MB === 0 ? Infinity : config.PAGES_IN_FLIGHT_MB * 1024 * 1024);
  }

  /** Waits for room for a page of `take` visits. */
  reserve(take: number): Promise<InFlightSlot> {
    return this.bodies.reserve(take * this.bytesPerVisit);
  }

  /** What a page of `take` visits took: later estimates follow it. */
  learn(take: number, body: Buffer): void {
    if (take > 0 && body.length > 0) this.bytesPerVisit = Math.round(0.8 * this.bytesPerVisit + (0.2 * body.length) / take);
  }
}
