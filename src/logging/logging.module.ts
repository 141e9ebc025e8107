import { Global, Inject, Module, RequestMethod, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { HttpLogger } from 'pino-http';
import { AppConfig } from '../config/app-config.js';
import { AppLogger } from './app-logger.js';
import { createRequestLogger } from './request-logging.js';

const REQUEST_LOGGER = Symbol('REQUEST_LOGGER');

/**
 * JSON lines through pino: the request lines (request-logging.ts), and Nest's own logger
 * (`AppLogger`, installed by setupApp) on the same root logger.
 */
@Global()
@Module({
  providers: [
    { provide: REQUEST_LOGGER, inject: [AppConfig], useFactory: (config: AppConfig) => createRequestLogger(config) },
    { provide: AppLogger, inject: [REQUEST_LOGGER], useFactory: (http: HttpLogger) => new AppLogger(http.logger) },
  ],
  exports: [AppLogger],
})
export class LoggingModule implements NestModule {
  constructor(@Inject(REQUEST_LOGGER) private readonly http: HttpLogger) {}

  configure(consumer: MiddlewareConsumer): void {
    const http = this.http;
    // Every route. Handlers are not run inside an AsyncLocalStorage context carrying the
    // request's logger: on Node 20 that turns on promise hooks for every promise of every
    // request, which cost more than all of pino-http (0.12 ms of CPU a request); what an
    // operator needs from a failed request's log is its request id, which the problem filter
    // writes on its line.
    consumer
      .apply((req: Request, res: Response, next: NextFunction) => http(req, res, next))
      .forRoutes({ path: '{/*splat}', method: RequestMethod.ALL });
  }
}
