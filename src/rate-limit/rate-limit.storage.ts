import { Logger } from '@nestjs/common';
import type { ThrottlerStorage } from '@nestjs/throttler';
import type { Redis } from 'ioredis';
import type { MetricsService } from '../metrics/metrics.service.js';
import { LocalRateLimits, type WindowCount } from './local-rate-limits.js';

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
 * A fixed window in Redis, atomically: count the hit, start the window on the first one,
 * and once past the limit block the key for the block duration.
 */
const COUNT_SCRIPT = `
local blocked = redis.call('PTTL', KEYS[2])
if blocked > 0 then
  return {tonumber(redis.call('GET', KEYS[1]) or ARGV[2]) , redis.call('PTTL', KEYS[1]), 1, blocked}
end
local hits = redis.call('INCR', KEYS[1])
if hits == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[1]); ttl = tonumber(ARGV[1]) end
if hits > tonumber(ARGV[2]) then
  redis.call('SET', KEYS[2], '1', 'PX', ARGV[3])
  return {hits, ttl, 1, tonumber(ARGV[3])}
end
return {hits, ttl, 0, 0}
`;

/** A count as the throttler takes it; `now` is when it was made. */
function countResult([hits, windowMs, blocked, blockMs]: WindowCount, now: number): CountResult {
  return {
    totalHits: hits,
    timeToExpire: Math.max(1, Math.ceil(windowMs / 1000)),
    isBlocked: blocked === 1,
    timeToBlockExpire: Math.max(0, Math.ceil(blockMs / 1000)),
    resetAt: now + Math.max(0, blocked === 1 ? blockMs : windowMs),
  };
}

/**
 * Rate-limit counters shared by every replica through Redis. When Redis cannot be reached
 * the count is kept in the process instead, in the same fixed windows (the service keeps
 * serving; the limit is then per replica), which is logged by the Redis client and counted
 * in a metric.
 */
export class RateLimitStorage implements ThrottlerStorage {
  private readonly local = new LocalRateLimits();
  private readonly logger = new Logger('RateLimit');

  constructor(
    private readonly redis: Redis | null,
    private readonly prefix: string,
    private readonly metrics: MetricsService,
  ) {}

  /** Keys are already per throttler (`name:tracker`), so the throttler's name is not needed here. */
  async increment(key: string, ttl: number, limit: number, blockDuration: number): Promise<CountResult> {
    const counted = (await this.inRedis(key, ttl, limit, blockDuration)) ?? this.local.count(key, ttl, limit, blockDuration);
    return countResult(counted, Date.now());
  }

  /** The Redis script's count, or undefined when there is no Redis or it failed (then count here). */
  private async inRedis(key: string, ttl: number, limit: number, blockDuration: number): Promise<WindowCount | undefined> {
    if (!this.redis) return undefined;
    try {
      if (this.redis.status !== 'ready') throw new Error(`Redis is ${this.redis.status}`);
      const full = `${this.prefix}rl:${key}`;
      return (await this.redis.eval(COUNT_SCRIPT, 2, full, `${full}:blocked`, ttl, limit, blockDuration)) as WindowCount;
    } catch (error) {
      this.metrics.rateLimitStoreFallbacks.inc();
      this.logger.debug(`counted in the process: ${(error as Error).message}`);
      return undefined;
    }
  }
}
