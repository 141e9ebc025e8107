import { Injectable, Logger } from '@nestjs/common';
import type { Redis } from 'ioredis';
import { storeKeyDigest } from '../common/store-key.js';
import { AppConfig } from '../config/app-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { RedisGate } from '../redis/redis-gate.js';
import { LocalTokenFailures } from './local-token-failures.js';

/** Client ids the process tracks at most, in each tier of LocalTokenFailures. */
const LOCAL_CAPACITY = 100_000;

/**
 * Counts one failure, unless the window has seen its guess (KEYS[2], the set of the window's
 * guesses, expires with the count): the first starts the window (a key left without one gets
 * it too). Gives the count, or -1 for a guess made before.
 */
const RECORD_SCRIPT = `
if redis.call('SADD', KEYS[2], ARGV[2]) == 0 then return -1 end
local failures = redis.call('INCR', KEYS[1])
if failures == 1 or redis.call('PTTL', KEYS[1]) == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
redis.call('PEXPIRE', KEYS[2], redis.call('PTTL', KEYS[1]))
return failures
`;

/** Milliseconds until a client id at the limit may try again; 0 below the limit. */
const BLOCKED_SCRIPT = `
local failures = tonumber(redis.call('GET', KEYS[1]) or '0')
if failures < tonumber(ARGV[1]) then return 0 end
local left = redis.call('PTTL', KEYS[1])
if left == -1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]); return tonumber(ARGV[2]) end
return math.max(left, 0)
`;

/**
 * Counts failed token requests per client id in a fixed window. Once a client id reaches
 * TOKEN_FAILURES_MAX, every token request for it is refused until the window ends, the
 * right secret included, so guessing a secret runs at a few attempts per window. What counts
 * is each different wrong secret: the same one sent again (a job retrying, a client library
 * that tries Basic and then the body with the same secret) is no new guess and counts once.
 *
 * The counts are kept where the rate limits are: in Redis when REDIS_URL is set, so that
 * a lockout holds on every replica, each client id a key of its own that expires with its
 * window. When Redis cannot be reached the service keeps answering, as the rate limiter
 * does: the failures are counted in the process (the lockout then holds per replica), which
 * the Redis client logs and a metric counts. A lockout counted in the process while Redis
 * was away still holds there once Redis is back.
 */
@Injectable()
export class TokenFailuresService {
  private readonly local: LocalTokenFailures;
  private readonly logger = new Logger('TokenFailures');
  private readonly windowMs: number;

  constructor(
    private readonly config: AppConfig,
    private readonly redis: RedisGate,
    private readonly metrics: MetricsService,
  ) {
    this.windowMs = config.TOKEN_FAILURES_WINDOW_SECONDS * 1000;
    this.local = new LocalTokenFailures({ limit: config.TOKEN_FAILURES_MAX, windowMs: this.windowMs, capacity: LOCAL_CAPACITY });
  }

  /** Seconds until the client id may try again, or 0 when it may try now. */
  async blockedFor(clientId: string): Promise<number> {
    const sharedMs = await this.inRedis(clientId, (redis, key) =>
      redis.eval(BLOCKED_SCRIPT, 1, key, this.config.TOKEN_FAILURES_MAX, this.windowMs),
    );
    const shared = typeof sharedMs === 'number' && sharedMs > 0 ? Math.ceil(sharedMs / 1000) : 0;
    return Math.max(shared, this.local.blockedFor(clientId));
  }

  /** Counts a failed token request for the client id; `guess` stands for the secret it tried (guessDigest). */
  async recordFailure(clientId: string, guess: string): Promise<void> {
    const counted = await this.inRedis(clientId, (redis, key) => redis.eval(RECORD_SCRIPT, 2, key, `${key}:g`, this.windowMs, guess));
    if (counted === undefined) this.local.recordFailure(clientId, guess);
  }

  /** The script's answer, or undefined when there is no Redis or it failed (then count here). */
  private async inRedis(clientId: string, run: (redis: Redis, key: string) => Promise<unknown>): Promise<unknown> {
    if (!this.redis.redis) return undefined;
    const answer = await this.redis.run((redis) => run(redis, `${this.config.REDIS_KEY_PREFIX}tf:${storeKeyDigest(clientId)}`));
    if (answer.ok) return answer.value;
    this.metrics.tokenFailureStoreFallbacks.inc();
    this.logger.debug(`counted in the process: ${answer.reason}`);
    return undefined;
  }
}
