import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { Express, NextFunction, Request, Response } from 'express';
import helmet from 'helmet';
import { AppLogger } from './logging/app-logger.js';
import { localDate } from './common/clock.js';
import { compressResponses } from './common/compression.js';
import { QUERY_CONTEXT_LOCAL, type QueryContext } from './common/query-params.js';
import { AppConfig } from './config/app-config.js';
import { setupSwagger } from './swagger.js';

/**
 * The global HTTP setup shared by the service and the HTTP tests, so the tests exercise
 * exactly what runs in production.
 */
function trustProxy(setting: string): boolean | number | string {
  if (setting === 'true' || setting === 'false') return setting === 'true';
  return /^\d+$/.test(setting) ? Number(setting) : setting;
}

/** The headers a middleware that sets the same headers on every response sets, found by running it once. */
function headersOf(middleware: (req: Request, res: Response, next: () => void) => void): [string, string][] {
  const headers: [string, string][] = [];
  const recorder = { setHeader: (name: string, value: unknown) => headers.push([name, String(value)]), removeHeader: () => undefined };
  let done = false;
  middleware({} as Request, recorder as unknown as Response, () => (done = true));
  if (!done) throw new Error('the security headers middleware did not finish synchronously');
  return headers;
}

export function setupApp(app: INestApplication): NestExpressApplication {
  const express = app as NestExpressApplication;
  const config = app.get(AppConfig);
  express.useLogger(app.get(AppLogger));
  express.disable('x-powered-by');
  express.set('trust proxy', trustProxy(config.TRUST_PROXY));
  // Security headers; the CSP lets Swagger UI (its own script and inline styles) work at /docs.
  // HSTS and upgrade-insecure-requests only on requests that came over TLS (req.secure: the
  // connection itself, or X-Forwarded-Proto from a proxy TRUST_PROXY trusts). Over plain http
  // they would make the browser fetch Swagger UI's scripts over https, from a port that
  // speaks none, and pin the host to https (a blank page at http://<address>:3000/docs).
  const directives = {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    fontSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    objectSrc: ["'none'"],
    frameAncestors: ["'none'"],
    baseUri: ["'self'"],
    formAction: ["'self'"],
  };
  const overTls = helmet({ contentSecurityPolicy: { directives: { ...directives, upgradeInsecureRequests: [] } } });
  const plainHttp = helmet({
    contentSecurityPolicy: { directives: { ...directives, upgradeInsecureRequests: null } },
    strictTransportSecurity: false,
  });
  // Helmet's headers do not depend on the request: worked out once, then set on each response
  // (running its dozen middlewares per request cost 0.09 ms of CPU, a sixth of a cached page).
  const tlsHeaders = headersOf(overTls);
  const plainHeaders = headersOf(plainHttp);
  express.use((req: Request, res: Response, next: NextFunction) => {
    for (const [name, value] of req.secure ? tlsHeaders : plainHeaders) res.setHeader(name, value);
    next();
  });
  // br or gzip for every body over 1 KB the client accepts it for (the visit pages encode their own).
  express.use(compressResponses());
  // Small bodies only: the token form and JSON are tiny; uploads are read by their own limits.
  express.useBodyParser('urlencoded', { limit: '16kb', extended: false });
  express.useBodyParser('json', { limit: '64kb' });
  if (config.CORS_ORIGINS) {
    express.enableCors({
      origin: config.CORS_ORIGINS.split(','),
      methods: ['GET', 'POST'],
      allowedHeaders: ['Authorization', 'svc-api-key', 'Content-Type', 'X-Request-Id', 'If-None-Match'],
      exposedHeaders: [
        'RateLimit',
        'RateLimit-Policy',
        'X-Rate-Limit-Limit',
        'X-Rate-Limit-Remaining',
        'X-Rate-Limit-Reset',
        'Retry-After',
        'Link',
        'X-Request-Id',
        'ETag',
        'WWW-Authenticate',
      ],
      maxAge: 600,
    });
  }
  // Responses are validated by their own headers (ETag on images); hashing every JSON
  // body for a weak ETag costs more than it saves on pages partners fetch once.
  express.set('etag', false);
  express.set('query parser', 'simple');
  // Settings the query rules read (Take maximum, range, today's date in RESULTS_TIMEZONE).
  const context: QueryContext = {
    today: () => localDate(config.RESULTS_TIMEZONE),
    takeMax: config.VISITS_TAKE_MAX,
    maxRangeDays: config.VISITS_MAX_RANGE_DAYS,
    zone: config.RESULTS_TIMEZONE,
    changesRetentionDays: config.CHANGES_RETENTION_DAYS,
    now: () => new Date(),
  };
  const server: Express = express.getHttpAdapter().getInstance();
  server.locals[QUERY_CONTEXT_LOCAL] = context;
  setupSwagger(express, config);
  return express;
}
