import { Global, Inject, Module, RequestMethod, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { HttpLogger } from 'pino-http';
import { AppConfig } from '../config/app-config.js';
import { AppLogger } from './app-logger.js';
import { createRequestLogger, requestLogContext } from './request-logging.js';

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
    // Every route; the handlers (and Nest's logs for them) run with the request's logger.
    consumer
      .apply((req: Request, res: Response, next: NextFunction) => http(req, res, () => requestLogContext.run(req.log, next)))
      .forRoutes({ path: '{/*splat}', method: RequestMethod.ALL });
  }
}
