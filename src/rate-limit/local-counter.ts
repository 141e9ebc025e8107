/** One key's window: hits counted since it started, and until when it is blocked. */
interface Window {
  hits: number;
  /** Epoch ms at which the window ends and counting starts afresh. */
  endsAt: number;
  /** Epoch ms until which the key is refused; 0 when not blocked. */
  blockedUntil: number;
}

/** What one count returns: as the Redis script does, so both stores behave alike. */
export interface LocalCount {
  totalHits: number;
  /** Epoch ms of the window's end. */
  windowEndsAt: number;
  /** Epoch ms of the block's end; 0 when not blocked. */
  blockedUntil: number;
}

/**
 * Fixed-window counters in the process, used when Redis is not configured or cannot be
 * reached: the same rule as the Redis script (the window starts with its first hit; past the
 * limit the key is blocked for the block duration), in constant time per request. A sliding
 * log of hit times (the throttler's own store) costs time in proportion to the limit on every
 * request. Windows that have ended are dropped once a minute, so memory follows the keys seen
 * in the last window.
 */
export class LocalCounter {
  private readonly windows = new Map<string, Window>();
  private sweepAt = 0;

  constructor(private readonly now: () => number = Date.now) {}

  increment(key: string, windowMs: number, limit: number, blockMs: number): LocalCount {
    const now = this.now();
    if (now >= this.sweepAt) this.sweep(now);
    let window = this.windows.get(key);
    if (window && window.blockedUntil > now) return { totalHits: window.hits, windowEndsAt: window.endsAt, blockedUntil: window.blockedUntil };
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + windowMs, blockedUntil: 0 };
      this.windows.set(key, window);
    }
    window.hits++;
    window.blockedUntil = window.hits > limit ? now + blockMs : 0;
    return { totalHits: window.hits, windowEndsAt: window.endsAt, blockedUntil: window.blockedUntil };
  }

  get size(): number {
    return this.windows.size;
  }

  private sweep(now: number): void {
    for (const [key, window] of this.windows) {
      if (window.endsAt <= now && window.blockedUntil <= now) this.windows.delete(key);
    }
    this.sweepAt = now + 60_000;
  }
}
