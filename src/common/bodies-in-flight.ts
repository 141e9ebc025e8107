import type { ServerResponse } from 'node:http';
import { POOLED_MIN_BYTES } from './body-pool.js';
import { whenGone } from './response-gone.js';

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

/** No room came for a page within the wait allowed (see BodiesInFlight.reserve). */
export class NoRoomInTime extends Error {
  constructor() {
    super('no room for the page body within the wait allowed');
  }
}

/**
 * What one party holds of the budget: estimates of pages being read, and bodies being
 * written, each body once however many responses carry it, until the last of them closes.
 */
class Holding {
  estimates = 0;
  carried = 0;
  /** Each body in flight and the number of responses writing it. */
  private readonly writers = new Map<Buffer, number>();

  get total(): number {
    return this.estimates + this.carried;
  }

  get empty(): boolean {
    return this.estimates === 0 && this.writers.size === 0;
  }

  /** Counts a response writing `body` (holding `held` bytes); gives the function that lets it go. */
  carry(body: Buffer, held: number): () => void {
    const writers = this.writers.get(body) ?? 0;
    this.writers.set(body, writers + 1);
    if (writers === 0) this.carried += held;
    return () => {
      const left = this.writers.get(body)! - 1;
      if (left > 0) {
        this.writers.set(body, left);
        return;
      }
      this.writers.delete(body);
      this.carried -= held;
    };
  }
}

/**
 * A memory budget for large response bodies while they are being written. Fifty partners
 * pulling different 1000-visit pages at once would otherwise hold fifty 4 MB bodies until
 * their sockets took them; here a request waits before its page is read while the bodies in
 * flight, and the estimates of pages being read, are over the budget. A body counts once
 * however many responses carry it (a cached page sent to many), until the last of them
 * closes. A page larger than the whole budget still goes when nothing else is in flight.
 *
 * One owner (a credential) may hold at most half of the budget, counted the same way: one
 * whose clients stop reading their responses cannot keep every other partner's pages waiting.
 */
export class BodiesInFlight {
  /** What every request holds. */
  private readonly all = new Holding();
  /** What each owner's requests hold. */
  private readonly owners = new Map<string, Holding>();
  private waiting: (() => void)[] = [];

  constructor(private readonly limit: number) {}

  /** The bytes counted now: bodies being written plus estimates of pages being read. */
  get inFlight(): number {
    return this.all.total;
  }

  /** The bytes the bodies being written hold, without the estimates. */
  get carried(): number {
    return this.all.carried;
  }

  /** What one owner holds now. */
  heldBy(owner: string): number {
    return this.owners.get(owner)?.total ?? 0;
  }

  /**
   * Waits until `estimate` more bytes fit, in the budget and in the owner's half of it (or
   * nothing is in flight, or nothing of the owner's), and reserves them. Throws NoRoomInTime
   * when they do not fit within `waitMs`.
   */
  async reserve(estimate: number, { owner, waitMs = Infinity }: { owner?: string; waitMs?: number } = {}): Promise<InFlightSlot> {
    const deadline = performance.now() + waitMs;
    while (!this.fits(estimate, owner)) {
      const left = deadline - performance.now();
      if (left <= 0) throw new NoRoomInTime();
      await new Promise<void>((wake) => {
        const timer = Number.isFinite(left) ? setTimeout(wake, left) : undefined;
        this.waiting.push(() => {
          clearTimeout(timer);
          wake();
        });
      });
    }
    const holdings = this.holdingsOf(owner);
    for (const holding of holdings) holding.estimates += estimate;
    let open = true;
    const giveBack = (): void => {
      if (!open) return;
      open = false;
      for (const holding of holdings) holding.estimates -= estimate;
      this.forgetIfEmpty(owner);
    };
    return {
      sending: (res, body) => {
        if (!open) return;
        giveBack();
        this.carry(res, body, owner);
        this.wake();
      },
      cancel: () => {
        giveBack();
        this.wake();
      },
    };
  }

  private fits(estimate: number, owner: string | undefined): boolean {
    const all = this.inFlight === 0 || this.inFlight + estimate <= this.limit;
    const own = owner === undefined ? 0 : this.heldBy(owner);
    return all && (own === 0 || own + estimate <= this.limit / 2);
  }

  /** The holdings a request counts in: the budget's, and its owner's when it names one. */
  private holdingsOf(owner: string | undefined): Holding[] {
    if (owner === undefined) return [this.all];
    let holding = this.owners.get(owner);
    if (holding === undefined) this.owners.set(owner, (holding = new Holding()));
    return [this.all, holding];
  }

  private forgetIfEmpty(owner: string | undefined): void {
    if (owner !== undefined && this.owners.get(owner)?.empty) this.owners.delete(owner);
  }

  private carry(res: ServerResponse, body: Buffer, owner: string | undefined): void {
    // Gone already (its 'close' has been emitted): the body will not be written.
    if (res.destroyed) return;
    const held = heldBytes(body);
    const releases = this.holdingsOf(owner).map((holding) => holding.carry(body, held));
    // Once the response is written out, or its connection went away first: a response queued
    // on a pipelined connection that closed before its turn never emits 'close' (see whenGone).
    whenGone(res, () => {
      for (const release of releases) release();
      this.forgetIfEmpty(owner);
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
