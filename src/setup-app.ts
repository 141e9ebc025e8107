import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Express } from 'express';
import { Logger } from 'nestjs-pino';
import { localDate } from './common/clock.js';
import { QUERY_CONTEXT_LOCAL, type QueryContext } from './common/query-params.js';
import { AppConfig } from './config/app-config.js';
import { setupSwagger } from './swagger.js';

/**
 * The global HTTP setup shared by the service and the HTTP tests, so the tests exercise
 * exactly what runs in production.
 */
export function setupApp(app: INestApplication): NestExpressApplication {
  const express = app as NestExpressApplication;
  const config = app.get(AppConfig);
  express.useLogger(app.get(Logger));
  express.disable('x-powered-by');
  // Responses are validated by their own headers (ETag on images); hashing every JSON
  // body for a weak ETag costs more than it saves on pages partners fetch once.
  express.set('etag', false);
  express.set('query parser', 'simple');
  // Settings the query rules read (Take maximum, range, today's date in RESULTS_TIMEZONE).
  const context: QueryContext = {
    today: () => localDate(config.RESULTS_TIMEZONE),
    takeMax: config.VISITS_TAKE_MAX,
    maxRangeDays: config.VISITS_MAX_RANGE_DAYS,
  };
  const server: Express = express.getHttpAdapter().getInstance();
  server.locals[QUERY_CONTEXT_LOCAL] = context;
  setupSwagger(express, config);
  return express;
}
