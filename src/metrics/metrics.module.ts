import { Global, Module, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import { MetricsService } from './metrics.service.js';
import { RequestMetricsMiddleware } from './request-metrics.middleware.js';

@Global()
@Module({
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule implements NestModule {
  configure(consumer: MiddlewareConsumer): void {
    consumer.apply(RequestMetricsMiddleware).forRoutes('*');
  }
}
