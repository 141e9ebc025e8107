import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { Logger } from 'nestjs-pino';
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
  setupSwagger(express, config);
  return express;
}
