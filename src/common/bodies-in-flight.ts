import type { ServerResponse } from 'node:http';
import { POOLED_MIN_BYTES } from './body-pool.js';

/**
 * The memory a body holds: a large one its whole buffer, of which it may be the start (a page
 * written into a buffer of the pool, see BodyPool), so that the buffer, once given back to the
 * pool, takes no more of the budget than the body did.
 */
export function heldBytes(body: Buffer): number {
  return body.length >= POOLED_MIN_BYTES ? Math.max(body.length, body.buffer.byteLength) : body.length;
}

/** What a request holds between its reservation and the end of its response. */
export interface InFlightSlot {
  /** The response will carry `body`: it counts, instead of the estimate, until the response closes. */
  sending(res: ServerResponse, body: Buffer): void;
  /** No body after all (the request failed): the estimate is given back. */
  cancel(): void;
}

/**
 * A memory budget for large response bodies while they are being written. Fifty partners
 * pulling different 1000-visit pages at once would otherwise hold fifty 4 MB bodies until
 * their sockets took them; here a request waits before its page is read while the bodies in
 * flight, and the estimates of pages being read, are over the budget. A body counts once
 * however many responses carry it (a cached page sent to many), until the last of them
 * closes. A page larger than the whole budget still goes when nothing else is in flight.
 */
export class BodiesInFlight {
  /** Estimates of the pages being read. */
  private estimates = 0;
  /** What the bodies being written hold (see heldBytes). */
  private carriedBytes = 0;
  /** Each body in flight and the number of responses writing it. */
  private readonly writers = new Map<Buffer, number>();
  private waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /** The bytes counted now: bodies being written plus estimates of pages being read. */
  get inFlight(): number {
    return this.estimates + this.carriedBytes;
  }

  /** The bytes the bodies being written hold, without the estimates. */
  get carried(): number {
    return this.carriedBytes;
  }

  /** Waits until `estimate` more bytes fit (or nothing is in flight), and reserves them. */
  async reserve(estimate: number): Promise<InFlightSlot> {
    while (this.inFlight > 0 && this.inFlight + estimate > this.limit) await new Promise<void>((wake) => this.waiting.push(wake));
    this.estimates += estimate;
    let open = true;
    const giveBack = (): void => {
      if (!open) return;
      open = false;
      this.estimates -= estimate;
    };
    return {
      sending: (res, body) => {
        if (!open) return;
        giveBack();
        this.carry(res, body);
        this.wake();
      },
      cancel: () => {
        giveBack();
        this.wake();
      },
    };
  }

  private carry(res: ServerResponse, body: Buffer): void {
    // Gone already (its 'close' has been emitted): the body will not be written.
    if (res.destroyed) return;
    const writers = this.writers.get(body) ?? 0;
    this.writers.set(body, writers + 1);
    const held = heldBytes(body);
    if (writers === 0) this.carriedBytes += held;
    // 'close' comes once the response is written out, or when the connection went away first.
    res.once('close', () => {
      const left = this.writers.get(body)! - 1;
      if (left > 0) {
        this.writers.set(body, left);
        return;
      }
      this.writers.delete(body);
      this.carriedBytes -= held;
      this.wake();
    });
  }

  /** Every waiting request looks again; those that still do not fit wait on. */
  private wake(): void {
    const waiting = this.waiting;
    this.waiting = [];
    for (const wake of waiting) wake();
  }
}
