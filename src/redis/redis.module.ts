import { Global, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Redis, type RedisOptions } from 'ioredis';
import { AppConfig } from '../config/app-config.js';
import { RedisGate } from './redis-gate.js';

export const REDIS = Symbol('Redis');

/** How often a Redis that stopped answering is asked whether it answers again (see RedisGate). */
export const REDIS_RECHECK_MS = 5000;

/**
 * How the client talks to Redis: commands fail at once while it is not connected, and after
 * a second without an answer (REDIS_COMMAND_TIMEOUT_MS; see RedisGate, which then stops sending
 * them for a while).
 */
export const REDIS_OPTIONS: RedisOptions = {
  enableOfflineQueue: false,
  maxRetriesPerRequest: 0,
  connectTimeout: 2000,
  commandTimeout: 1000,
  retryStrategy: (attempt) => Math.min(attempt * 250, 5000),
};

/**
 * The Redis client when REDIS_URL is set, else null. Commands fail fast instead of queueing
 * while Redis is away (the rate limiter and the token-failure lockout then count in the
 * process), and the client keeps reconnecting in the background.
 */
function createRedis(config: AppConfig): Redis | null {
  if (!config.REDIS_URL) return null;
  const logger = new Logger('Redis');
  const client = new Redis(config.REDIS_URL, { ...REDIS_OPTIONS, commandTimeout: config.REDIS_COMMAND_TIMEOUT_MS });
  let healthy: boolean | null = null;
  client.on('ready', () => {
    if (healthy !== true) logger.log('connected');
    healthy = true;
  });
  client.on('error', (error: Error) => {
    if (healthy !== false) logger.warn(`unreachable (${error.message}): rate limits and token failures are counted per process until it returns`);
    healthy = false;
  });
  return client;
}

class RedisShutdown implements OnApplicationShutdown {
  constructor(
    @Inject(REDIS) private readonly redis: Redis | null,
    private readonly gate: RedisGate,
  ) {}

  async onApplicationShutdown(): Promise<void> {
    this.gate.close();
    const redis = this.redis;
    if (!redis) return;
    // What fails while the client closes is no news (a short command closing before Redis
    // answered its first connection said Redis was unreachable): nothing is counted any more.
    redis.removeAllListeners('error');
    redis.on('error', () => undefined);
    if (redis.status !== 'ready') {
      redis.disconnect();
      return;
    }
    await redis.quit().catch(() => redis.disconnect());
  }
}

@Global()
@Module({
  providers: [
    { provide: REDIS, inject: [AppConfig], useFactory: createRedis },
    { provide: RedisGate, inject: [REDIS], useFactory: (redis: Redis | null) => new RedisGate(redis, REDIS_RECHECK_MS) },
    RedisShutdown,
  ],
  exports: [REDIS, RedisGate],
})
export class RedisModule {}
