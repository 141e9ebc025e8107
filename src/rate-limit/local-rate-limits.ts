/** How often ended windows are dropped, at most. */
const SWEEP_MS = 60_000;

interface Window {
  hits: number;
  /** Epoch ms at which the window ends. */
  endsAt: number;
  /** Epoch ms until which the key is blocked; 0 when it has not been. */
  blockedUntil: number;
}

/** One count, as the Redis script answers it: hits, ms left in the window, 1 when blocked, ms left blocked. */
export type WindowCount = [hits: number, windowMs: number, blocked: 0 | 1, blockMs: number];

/**
 * The fixed windows of the Redis script, kept in the process for when there is no Redis or it
 * cannot be reached: a count per key that its first hit starts, and once past the limit a
 * block of its own duration. Each hit costs the same whatever the rate (the throttler's own
 * in-memory store keeps one timestamp per hit of the last minute and filters them all on
 * every request, so at a thousand requests a second it dominated the token endpoint).
 * Windows and blocks that have ended are dropped at most once a minute, on a count.
 */
export class LocalRateLimits {
  private readonly windows = new Map<string, Window>();
  private nextSweep: number;

  /** `now`: milliseconds; the tests' own clock. */
  constructor(private readonly now: () => number = Date.now) {
    this.nextSweep = now() + SWEEP_MS;
  }

  count(key: string, ttlMs: number, limit: number, blockMs: number): WindowCount {
    const now = this.now();
    this.sweep(now);
    let window = this.windows.get(key);
    if (window && window.blockedUntil > now) {
      // As in Redis, a window that ended during the block reads as the limit.
      return [window.endsAt > now ? window.hits : limit, window.endsAt - now, 1, window.blockedUntil - now];
    }
    if (!window || window.endsAt <= now) {
      window = { hits: 0, endsAt: now + ttlMs, blockedUntil: 0 };
      this.windows.set(key, window);
    }
    window.hits++;
    if (window.hits <= limit) return [window.hits, window.endsAt - now, 0, 0];
    window.blockedUntil = now + blockMs;
    return [window.hits, window.endsAt - now, 1, blockMs];
  }

  /** Keys counted now: windows or blocks not yet ended (until the next sweep). */
  get size(): number {
    return this.windows.size;
  }

  private sweep(now: number): void {
    if (now < this.nextSweep) return;
    this.nextSweep = now + SWEEP_MS;
    for (const [key, window] of this.windows) {
      if (window.endsAt <= now && window.blockedUntil <= now) this.windows.delete(key);
    }
  }
}
