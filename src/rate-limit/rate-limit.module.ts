import { Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import type { Request } from 'express';
import { AppConfig } from '../config/app-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { RedisGate } from '../redis/redis-gate.js';
import { apiLimit, isTokenRequest, tokenLimit } from './rate-limit.guard.js';
import { RateLimitStorage } from './rate-limit.storage.js';

/** The limits of docs/interface.md ("Rate limits"): per API key over the whole API, and per client id on the token endpoint. */
@Module({
  imports: [
    ThrottlerModule.forRootAsync({
      inject: [AppConfig, RedisGate, MetricsService],
      useFactory: (config: AppConfig, redis: RedisGate, metrics: MetricsService) => ({
        setHeaders: false,
        storage: new RateLimitStorage(redis, config.REDIS_KEY_PREFIX, metrics),
        throttlers: [
          // Each with its tracker, which RateLimitGuard calls with the owner of the request's key.
          apiLimit(config),
          { ...tokenLimit(config), skipIf: (context) => !isTokenRequest(context.switchToHttp().getRequest<Request>()) },
        ],
      }),
    }),
  ],
})
export class RateLimitModule {}
