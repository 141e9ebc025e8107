import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { MetricsService } from '../metrics/metrics.service.js';
import type { RedisGate } from '../redis/redis-gate.js';
import { LocalCounter } from './local-counter.js';

/** What the throttler needs back from one count: hits, and seconds until reset or unblock. */
export interface CountResult {
  totalHits: number;
  timeToExpire: number;
  isBlocked: boolean;
  timeToBlockExpire: number;
  /** When requests are counted afresh (epoch ms): the window's end, or the block's when blocked. */
  resetAt: number;
}

/**
 * A fixed window in Redis, atomically: count the hit and start the window on the first one.
 * Past the limit the key is refused until the window ends (a fixed window: a refusal never
 * moves the time a client was told it could come back). Gives the window's end as an instant
 * too: the key's expiry (PEXPIRETIME, Redis 7), or Redis's clock plus what is left of it.
 */
const COUNT_SCRIPT = `
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
local ends = redis.pcall('PEXPIRETIME', KEYS[1])
if type(ends) ~= 'number' then
  local now = redis.call('TIME')
  ends = tonumber(now[1]) * 1000 + math.floor(tonumber(now[2]) / 1000) + ttl
end
if hits > tonumber(ARGV[2]) then return {hits, ttl, 1, ttl, ends} end
return {hits, ttl, 0, 0, ends}
`;

/**
 * Rate-limit counters shared by every replica through Redis. When Redis cannot be reached,
 * or does not answer (RedisGate), the count is kept in the process instead (the service
 * keeps serving; the limit is then per replica), which is logged and counted in a metric.
 */
export class RateLimitStorage implements ThrottlerStorage {
  private readonly local = new LocalCounter();
  private readonly logger = new Logger('RateLimit');

  constructor(
    private readonly redis: RedisGate,
    private readonly prefix: string,
    private readonly metrics: MetricsService,
  ) {}

  /** The throttler's block duration is not used: a key past its limit is refused until its window ends. */
  async increment(key: string, ttl: number, limit: number): Promise<CountResult> {
    if (this.redis.redis) {
      const full = `${this.prefix}rl:${key}`;
      const answer = await this.redis.run((redis) => redis.eval(COUNT_SCRIPT, 1, full, ttl, limit));
      if (answer.ok) {
        const [hits, windowMs, blocked, blockMs, endsAt] = answer.value as [number, number, number, number, number];
        return {
          totalHits: hits,
          timeToExpire: Math.max(1, Math.ceil(windowMs / 1000)),
          isBlocked: blocked === 1,
          timeToBlockExpire: Math.max(0, Math.ceil(blockMs / 1000)),
          // The window's end as Redis keeps it (its key's expiry): one instant for every
          // response of the window on every replica, whatever the round trip or a replica's clock.
          resetAt: endsAt,
        };
      }
      this.metrics.rateLimitStoreFallbacks.inc();
      this.logger.debug(`counted in the process: ${answer.reason}`);
    }
    // One instant for the count and the seconds left: read twice, a millisecond between them made a
    // fresh window 61 seconds long in the RateLimit header.
    const now = Date.now();
    const count = this.local.increment(key, ttl, limit, now);
    const blocked = count.blockedUntil > now;
    return {
      totalHits: count.totalHits,
      timeToExpire: Math.max(1, Math.ceil((count.windowEndsAt - now) / 1000)),
      isBlocked: blocked,
      timeToBlockExpire: blocked ? Math.ceil((count.blockedUntil - now) / 1000) : 0,
      resetAt: blocked ? count.blockedUntil : count.windowEndsAt,
    };
  }

}
