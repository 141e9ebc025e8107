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

/**
 * What a window takes besides its key: the window, the map's entry and the lists' slots. A
 * key takes its length (one byte a character: the keys are ASCII).
 */
const ENTRY_BYTES = 100;
/** The bytes the windows take at most: some 150,000 keys as the guard makes them (a limit's name and a digest). */
const CAPACITY_BYTES = 20 * 1024 * 1024;
/**
 * Ended windows dropped, at most, from the least recently counted end at each count: more than
 * the one a count can add, so the windows follow the keys of the last window whatever the rate,
 * at a constant cost (a pass over every key, lru-cache's purgeStale, held the event loop 40 to
 * 110 ms at 150,000 keys).
 */
const DROPS_PER_COUNT = 2;

/**
 * Fixed-window counters in the process, used when Redis is not configured or cannot be
 * reached: the same rule as the Redis script (the window starts with its first hit; past the
 * limit the key is refused until the window ends, when counting starts afresh), in constant
 * time per request. A sliding log of hit times (the throttler's own store) costs time in
 * proportion to the limit on every request. Ended windows are dropped as keys are counted; at most
 * `capacityBytes` of windows are kept, each weighed with its key, the least recently counted
 * leaving first, so a flood of made-up keys, short or long, cannot grow the memory (it can
 * only give the keys it pushes out a fresh window).
 */
export class LocalCounter {
  private readonly windows: LRUCache<string, Window>;

  constructor(
    private readonly now: () => number = Date.now,
    capacityBytes = CAPACITY_BYTES,
  ) {
    // lru-cache checks ages on the same clock; ttlResolution 0 reads it on every check. Ended
    // windows are seen by its iterators too (allowStale), so that they can be dropped; a count
    // judges a window's end itself.
    this.windows = growingLru<string, Window>(capacityBytes, { ttlResolution: 0, perf: { now }, allowStale: true }, (_window, key) => ENTRY_BYTES + key.length);
  }

  /** Counts a hit at `now` (by default the counter's clock): the caller reads seconds left against the same instant. */
  increment(key: string, windowMs: number, limit: number, now = this.now()): LocalCount {
    this.dropEnded(now);
    let window = this.windows.get(key);
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + windowMs };
      this.windows.set(key, window, { ttl: windowMs });
    }
    // Every hit counts, a refused one too, as the Redis script's INCR does.
    window.hits++;
    return { totalHits: window.hits, windowEndsAt: window.endsAt, blockedUntil: window.hits > limit ? window.endsAt : 0 };
  }

  /**
   * Drops ended windows among the least recently counted: without it they would leave only
   * once the counter is full, holding its whole capacity after one flood of made-up keys.
   */
  private dropEnded(now: number): void {
    const ended: string[] = [];
    for (const entry of this.windows.rentries()) {
      const [key, window] = entry as [string, Window];
      if (window.endsAt > now || ended.length === DROPS_PER_COUNT) break;
      ended.push(key);
    }
    for (const key of ended) this.windows.delete(key);
  }

  /** Keys whose window has not ended. */
  get size(): number {
    this.windows.purgeStale();
    return this.windows.size;
  }

  /** The bytes the windows kept are weighed at, ended ones not yet dropped included. */
  get bytes(): number {
    return this.windows.calculatedSize;
  }
}
