import { Module, type DynamicModule } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import { AuthModule } from './auth/auth.module.js';
import { BranchesModule } from './branches/branches.module.js';
import { ClientsModule } from './clients/clients.module.js';
import { AppErrorFilter } from './common/oauth-error.js';
import { AppConfig } from './config/app-config.js';
import { ConfigModule } from './config/config.module.js';
import { DatabaseModule } from './database/database.module.js';
import { DemoModule } from './demo/demo.module.js';
import { HealthModule } from './health/health.module.js';
import { LoggingModule } from './logging/logging.module.js';
import { MenusModule } from './menus/menus.module.js';
import { MetricsModule } from './metrics/metrics.module.js';
import { RateLimitModule } from './rate-limit/rate-limit.module.js';
import { TOKEN_PATH } from './rate-limit/rate-limit.guard.js';
import { RedisModule } from './redis/redis.module.js';
import { VisitsModule } from './visits/visits.module.js';
import { WebhooksModule } from './webhooks/webhooks.module.js';

/** The whole service: the HTTP application and the operator CLI share it. */
@Module({})
export class AppModule {
  static forRoot(config: AppConfig): DynamicModule {
    return {
      module: AppModule,
      imports: [
        ConfigModule.forRoot(config),
        LoggingModule,
        DatabaseModule,
        RedisModule,
        MetricsModule,
        RateLimitModule,
        HealthModule,
        ClientsModule,
        BranchesModule,
        VisitsModule,
        WebhooksModule,
        MenusModule,
        AuthModule,
        DemoModule,
      ],
      providers: [{ provide: APP_FILTER, useFactory: () => new AppErrorFilter(TOKEN_PATH) }],
    };
  }
}
