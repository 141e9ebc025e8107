import type { LRUCache } from 'lru-cache';
import { growingLru } from '../common/growing-lru.js';

/** One key's window: hits counted since it started, and when it ends. */
interface Window {
  hits: number;
  /** Epoch ms at which the window ends and counting starts afresh. */
  endsAt: number;
}

/** What one count returns: as the Redis script does, so both stores behave alike. */
export interface LocalCount {
  totalHits: number;
  /** Epoch ms of the window's end. */
  windowEndsAt: number;
  /** Epoch ms until which the key is refused: the window's end once past the limit, else 0. */
  blockedUntil: number;
}

/** Keys counted at once: about 100 bytes each. */
const CAPACITY = 200_000;

/**
 * Fixed-window counters in the process, used when Redis is not configured or cannot be
 * reached: the same rule as the Redis script (the window starts with its first hit; past the
 * limit the key is refused until the window ends, when counting starts afresh), in constant
 * time per request. A sliding log of hit times (the throttler's own store) costs time in
 * proportion to the limit on every request. A window leaves when it has ended; at most
 * CAPACITY keys are kept, the least recently counted leaving first, so a flood of made-up API keys cannot grow the
 * memory (it can only give the keys it pushes out a fresh window).
 */
export class LocalCounter {
  private readonly windows: LRUCache<string, Window>;

  constructor(
    private readonly now: () => number = Date.now,
    capacity = CAPACITY,
  ) {
    // lru-cache checks ages on the same clock; ttlResolution 0 reads it on every check.
    this.windows = growingLru<string, Window>(capacity, { ttlResolution: 0, perf: { now } });
  }

  /** Counts a hit at `now` (by default the counter's clock): the caller reads seconds left against the same instant. */
  increment(key: string, windowMs: number, limit: number, now = this.now()): LocalCount {
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + windowMs };
      this.windows.set(key, window, { ttl: windowMs });
    }
    // Every hit counts, a refused one too, as the Redis script's INCR does.
    window.hits++;
    return { totalHits: window.hits, windowEndsAt: window.endsAt, blockedUntil: window.hits > limit ? window.endsAt : 0 };
  }

  /** Keys whose window has not ended. */
  get size(): number {
    this.windows.purgeStale();
    return this.windows.size;
  }
}
