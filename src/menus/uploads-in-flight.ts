import { Injectable } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { BodiesInFlight, NoRoomInTime, type InFlightSlot } from '../common/bodies-in-flight.js';
import { ProblemException } from '../common/problem.js';
import { whenGone } from '../common/response-gone.js';
import { dropWhenBodyStalls } from '../common/stalled-connections.js';
import { AppConfig } from '../config/app-config.js';

/** The answer to an upload that found no room: the service is busy, not broken. */
export const UPLOADS_BUSY_DETAIL = 'The service is receiving as many uploads as it holds; retry after the time in Retry-After.';

/**
 * The budget of dish upload bodies being received and held (UPLOADS_IN_FLIGHT_MB). Each
 * upload holds its image in memory (up to IMAGE_MAX_BYTES and the form's 256 KiB) from its
 * first byte until its response: without a bound, 100 connections that sent 4 MB of an image
 * and stopped took 410 MB, and one API key within its rate limit could hold hundreds of such
 * bodies. An upload reserves what its body can hold (its declared length, or the largest
 * form) before any of it is read, and is refused at once when that does not fit: waiting
 * would only queue more connections. One credential holds at most half of the budget (its
 * first upload goes whatever its size, as on an empty budget), and a body that brings no
 * bytes for UPLOADS_STALL_SECONDS, or fewer than UPLOADS_MIN_KB_PER_SECOND over that time
 * (a byte every few seconds held 5 MB of room for the 300 s of the request timeout), is
 * dropped with its connection, which gives its room back.
 */
@Injectable()
export class UploadsInFlight {
  private readonly bodies: BodiesInFlight;
  private readonly stallMs: number;
  private readonly minBytesPerSecond: number;

  constructor(config: AppConfig) {
    this.bodies = new BodiesInFlight(config.UPLOADS_IN_FLIGHT_MB === 0 ? Infinity : config.UPLOADS_IN_FLIGHT_MB * 1024 * 1024);
    this.stallMs = config.UPLOADS_STALL_SECONDS * 1000;
    this.minBytesPerSecond = config.UPLOADS_MIN_KB_PER_SECOND * 1024;
  }

  /** The bytes reserved by the uploads in flight. */
  get inFlight(): number {
    return this.bodies.inFlight;
  }

  /**
   * Reserves `bytes` for the request's body, `owner`'s (the credential), until its response is
   * finished with, and drops its connection when the body stalls. Throws a 503 problem with
   * Retry-After when they do not fit.
   */
  async admit(req: IncomingMessage, res: ServerResponse, bytes: number, owner: string | undefined): Promise<void> {
    let slot: InFlightSlot;
    try {
      slot = await this.bodies.reserve(bytes, { owner, waitMs: 0 });
    } catch (error) {
      if (!(error instanceof NoRoomInTime)) throw error;
      throw new ProblemException(503, UPLOADS_BUSY_DETAIL, { headers: { 'Retry-After': '5' } });
    }
    whenGone(res, () => slot.cancel());
    // `bytes` is the declared length, or the largest form: the rest of it is all a window must bring.
    dropWhenBodyStalls(req, res, this.stallMs, { minBytesPerSecond: this.minBytesPerSecond, expected: bytes });
  }
}
