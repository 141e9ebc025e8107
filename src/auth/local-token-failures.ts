import type { LRUCache } from 'lru-cache';
import { growingLru } from '../common/growing-lru.js';

export interface LocalTokenFailuresOptions {
  /** Failures that lock a client id out (TOKEN_FAILURES_MAX). */
  limit: number;
  /** Length of the window, from a client id's first failure. */
  windowMs: number;
  /** Client ids tracked at most, in each of the two tiers. */
  capacity: number;
  /** Milliseconds on a clock that only moves forward; the tests' own clock. */
  now?: () => number;
}

interface Window {
  failures: number;
  resetsAt: number;
  /** The guesses counted in the window (fewer than the limit: at the limit the window becomes a lockout). */
  guesses: Set<string>;
}

/**
 * Failed token requests per client id in this process, in fixed windows that start with a
 * client id's first failure; a guess (the secret tried) counts once in its window. Every entry
 * leaves on its own, when its window ends, or when its tier is full and it is the least
 * recently used there; nothing is ever cleared whole.
 *
 * Client ids still below the limit are counted in one tier: making room there forgets at
 * most limit - 1 failures of the client id that failed least recently. A client id that
 * reaches the limit moves to the lockouts, where nothing but other lockouts competes for
 * room: failing with any number of other client ids never lifts a lockout. Filling the
 * lockouts would take `capacity` x `limit` failed token requests within one window, more
 * than the per-key (or, without a key, per-address) rate limit lets one caller make.
 */
export class LocalTokenFailures {
  private readonly counting: LRUCache<string, Window>;
  /** When each lockout ends. */
  private readonly lockouts: LRUCache<string, number>;
  private readonly now: () => number;

  constructor(private readonly options: LocalTokenFailuresOptions) {
    // The monotonic clock: windows and lockouts are durations of this process, never compared with
    // an instant from elsewhere (blockedFor gives seconds). On the system clock a step back (NTP,
    // a resumed machine) by an hour kept a 15-minute lockout, and the window before it, for the
    // hour too, on a service without Redis or while Redis was away.
    this.now = options.now ?? (() => performance.now());
    // lru-cache checks ages on the same clock; ttlResolution 0 reads it on every check.
    const lru = { ttl: options.windowMs, ttlResolution: 0, perf: { now: this.now } };
    this.counting = growingLru<string, Window>(options.capacity, lru);
    this.lockouts = growingLru<string, number>(options.capacity, lru);
  }

  /** Seconds until the client id may try again, or 0 when it may try now. */
  blockedFor(clientId: string): number {
    const resetsAt = this.lockouts.get(clientId);
    const left = resetsAt === undefined ? 0 : resetsAt - this.now();
    return left > 0 ? Math.ceil(left / 1000) : 0;
  }

  /** Counts a failure of the client id, unless its window has seen the guess (the same wrong secret again). */
  recordFailure(clientId: string, guess: string): void {
    const now = this.now();
    if (this.blockedFor(clientId) > 0) return;
    let window = this.counting.get(clientId);
    if (!window || window.resetsAt <= now) {
      window = { failures: 0, resetsAt: now + this.options.windowMs, guesses: new Set() };
      this.counting.set(clientId, window, { ttl: this.options.windowMs });
    }
    if (window.guesses.has(guess)) return;
    window.guesses.add(guess);
    window.failures++;
    if (window.failures >= this.options.limit) {
      this.counting.delete(clientId);
      this.lockouts.set(clientId, window.resetsAt, { ttl: window.resetsAt - now });
    }
  }

  /** Client ids tracked, counting and locked out (for the tests). */
  get size(): { counting: number; lockouts: number } {
    return { counting: this.counting.size, lockouts: this.lockouts.size };
  }
}
