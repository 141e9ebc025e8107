import { Global, Inject, Module, RequestMethod, type MiddlewareConsumer, type NestModule } from '@nestjs/common';
import type { Logger } from 'pino';
import { AppConfig } from '../config/app-config.js';
import { AppLogger } from './app-logger.js';
import { createRootLogger, requestLogger } from './request-logging.js';

const ROOT_LOGGER = Symbol('ROOT_LOGGER');

/** The request line middleware (see requestLogger): Express runs it, and so does what answers requests before Express. */
export const REQUEST_LOGGER = Symbol('REQUEST_LOGGER');
export type RequestLogger = ReturnType<typeof requestLogger>;

/**
 * JSON lines through pino: the request lines (request-logging.ts), and Nest's own logger
 * (`AppLogger`, installed by setupApp) on the same root logger.
 */
@Global()
@Module({
  providers: [
    { provide: ROOT_LOGGER, inject: [AppConfig], useFactory: (config: AppConfig) => createRootLogger(config) },
    { provide: AppLogger, inject: [ROOT_LOGGER], useFactory: (root: Logger) => new AppLogger(root) },
    { provide: REQUEST_LOGGER, inject: [ROOT_LOGGER], useFactory: (root: Logger) => requestLogger(root) },
  ],
  exports: [AppLogger, REQUEST_LOGGER],
})
export class LoggingModule implements NestModule {
  constructor(@Inject(REQUEST_LOGGER) private readonly requestLines: RequestLogger) {}

  configure(consumer: MiddlewareConsumer): void {
    // Every route. Handlers are not run inside an AsyncLocalStorage context carrying the
    // request's logger: on Node 20 that turns on promise hooks for every promise of every
    // request, which cost more than all of the request logging (0.12 ms of CPU a request);
    // what an operator needs from a failed request's log is its request id, which the problem
    // filter writes on its line.
    consumer.apply(this.requestLines).forRoutes({ path: '{/*splat}', method: RequestMethod.ALL });
  }
}
