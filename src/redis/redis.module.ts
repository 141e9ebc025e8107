import { Global, Inject, Logger, Module, type OnApplicationShutdown } from '@nestjs/common';
import { Redis } from 'ioredis';
import { AppConfig } from '../config/app-config.js';

export const REDIS = Symbol('Redis');

/**
 * The Redis client when REDIS_URL is set, else null. Commands fail fast instead of queueing
 * while Redis is away (the rate limiter and the token-failure lockout then count in the
 * process), and the client keeps reconnecting in the background.
 */
function createRedis(config: AppConfig): Redis | null {
  if (!config.REDIS_URL) return null;
  const logger = new Logger('Redis');
  const client = new Redis(config.REDIS_URL, {
    enableOfflineQueue: false,
    maxRetriesPerRequest: 0,
    connectTimeout: 2000,
    commandTimeout: 1000,
    retryStrategy: (attempt) => Math.min(attempt * 250, 5000),
  });
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
  constructor(@Inject(REDIS) private readonly redis: Redis | null) {}

  async onApplicationShutdown(): Promise<void> {
    if (!this.redis) return;
    await this.redis.quit().catch(() => this.redis?.disconnect());
  }
}

@Global()
@Module({
  providers: [{ provide: REDIS, inject: [AppConfig], useFactory: createRedis }, RedisShutdown],
  exports: [REDIS],
})
export class RedisModule {}
