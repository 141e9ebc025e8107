import type { INestApplication } from '@nestjs/common';
import type { CorsOptions } from '@nestjs/common/interfaces/external/cors-options.interface.js';
import cors from 'cors';
import type { NestExpressApplication } from '@nestjs/platform-express';
import { json, urlencoded, type Express, type NextFunction, type Request, type Response } from 'express';
import { AppLogger } from './logging/app-logger.js';
import { REQUEST_LOGGER, type RequestLogger } from './logging/logging.module.js';
import { localDate } from './common/clock.js';
import { keepingBodyErrors } from './common/body-errors.js';
import { answerServerOptions } from './common/allowed-methods.js';
import { answerClientErrors } from './common/client-errors.js';
import { continueOnRead } from './common/expect-continue.js';
import { verifyFormEscapes } from './common/form-escapes.js';
import { repairPathEscapes, routeSpelling } from './common/path-escapes.js';
import { FORM_FIELDS_MAX } from './common/problem.filter.js';
import { compressResponses } from './common/compression.js';
import { cameOverTls, SecurityHeaders, type TrustProxy } from './common/security-headers.js';
import { PageTokens } from './common/page-token.js';
import { QUERY_CONTEXT_LOCAL, type QueryContext } from './common/query-params.js';
import { AppConfig } from './config/app-config.js';
import { MetricsService } from './metrics/metrics.service.js';
import { setupSwagger } from './swagger.js';
import { VisitPagesLane } from './visits/visit-pages-lane.js';
import { TokenLane } from './auth/token-lane.js';
import { TOKEN_PATH } from './rate-limit/rate-limit.guard.js';
import type { LaneSetup } from './common/lane.js';

/** The largest token form and JSON body read (uploads have limits of their own). */
const FORM_MAX_BYTES = 16 * 1024;
const JSON_MAX_BYTES = 64 * 1024;

/** How long an idle kept-alive connection is held open (see setupApp). */
export const KEEP_ALIVE_MS = 65_000;

function trustProxy(setting: string): boolean | number | string {
  if (setting === 'true' || setting === 'false') return setting === 'true';
  return /^\d+$/.test(setting) ? Number(setting) : setting;
}

/** What browsers at `origins` (comma-separated) may do: the methods, the headers they send and read. */
function allowedCors(origins: string): CorsOptions {
  return {
    origin: origins.split(','),
    methods: ['GET', 'POST'],
    // X-Requested-With: Swagger UI's Authorize sends it, from a page of another origin too.
    allowedHeaders: ['Authorization', 'svc-api-key', 'Content-Type', 'X-Request-Id', 'If-None-Match', 'If-Match', 'X-Requested-With'],
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
      'Allow',
    ],
    maxAge: 600,
  };
}

/**
 * The CORS middleware, answering preflights only: an OPTIONS request that is no preflight (no
 * Access-Control-Request-Method, or no Origin, which a browser always sends with one) gets the
 * CORS headers and goes on to the routes, which answer it as any other method a path does not
 * have (405 with Allow), as they do with CORS off.
 */
function preflightsOnly(options: CorsOptions): (req: Request, res: Response, next: NextFunction) => void {
  const preflights = cors(options);
  const others = cors({ ...options, preflightContinue: true });
  return (req, res, next) =>
    (req.headers['access-control-request-method'] === undefined || req.headers.origin === undefined ? others : preflights)(req, res, next);
}

/**
 * The JSON parser everywhere but on the token endpoint, which reads a form and nothing else: a
 * JSON body there is answered as any body that is no form ('The request body must be
 * application/x-www-form-urlencoded.'), not judged as JSON first, where one that did not parse
 * was told it was no valid JSON, one naming another charset that 'the form' did, and one over
 * the JSON limit that 'the form' was over 16 KiB. Keeps the parser's name (see keepingBodyErrors).
 */
function notOnTokenPath(parser: (req: Request, res: Response, next: NextFunction) => void): (req: Request, res: Response, next: NextFunction) => void {
  const wrapper = (req: Request, res: Response, next: NextFunction): void => {
    if (routeSpelling(req.path) === TOKEN_PATH) next();
    else parser(req, res, next);
  };
  Object.defineProperty(wrapper, 'name', { value: parser.name });
  return wrapper;
}

/**
 * The global HTTP setup shared by the service and the HTTP tests, so the tests exercise
 * exactly what runs in production.
 */
export function setupApp(app: INestApplication): NestExpressApplication {
  const express = app as NestExpressApplication;
  const config = app.get(AppConfig);
  express.useLogger(app.get(AppLogger));
  // What was logged while the application was made, now through the service's logger (the
  // service makes it with autoFlushLogs off: see main.ts).
  express.flushLogs();
  express.disable('x-powered-by');
  express.set('trust proxy', trustProxy(config.TRUST_PROXY));
  // Security headers (see SecurityHeaders), over TLS or not as Express's req.secure decides it.
  const securityHeaders = new SecurityHeaders();
  const server: Express = express.getHttpAdapter().getInstance();
  const trust = server.get('trust proxy fn') as TrustProxy;
  // The request line and X-Request-Id for every request, Swagger UI's too, which no Nest route
  // serves (Nest's own run of the middleware passes a request already started).
  express.use(app.get<RequestLogger>(REQUEST_LOGGER));
  express.use((req: Request, res: Response, next: NextFunction) => {
    securityHeaders.set(res, cameOverTls(req, trust));
    next();
  });
  express.use(answerServerOptions);
  // A path segment that cannot be decoded reaches the routes and their checks, not Express's own 400.
  express.use(repairPathEscapes);
  // br or gzip for every body over 1 KB the client accepts it for (the visit pages encode their own).
  express.use(compressResponses());
  // Small bodies only: the token form and JSON are tiny; uploads are read by their own limits.
  // A body that cannot be read is refused after the rate limit (see BodyErrorGuard).
  const formParser = keepingBodyErrors(urlencoded({ limit: FORM_MAX_BYTES, extended: false, parameterLimit: FORM_FIELDS_MAX, verify: verifyFormEscapes }), {
    type: 'application/x-www-form-urlencoded',
    limit: FORM_MAX_BYTES,
  });
  express.use(formParser);
  express.use(notOnTokenPath(keepingBodyErrors(json({ limit: JSON_MAX_BYTES }), { type: 'application/json', limit: JSON_MAX_BYTES })));
  // CORS for the browser origins configured; the lane runs the same middleware on what it answers.
  const corsOptions = config.CORS_ORIGINS ? allowedCors(config.CORS_ORIGINS) : null;
  if (corsOptions) express.use(preflightsOnly(corsOptions));
  // Responses are validated by their own headers (ETag on images); hashing every JSON
  // body for a weak ETag costs more than it saves on pages partners fetch once.
  express.set('etag', false);
  // Every 304 is answered by the routes that have a validator (answeredNotModified). Express's
  // own freshness test would answer `If-None-Match: *` with a 304 on every other GET, with no
  // ETag and nothing the client could hold: there it is never fresh.
  Object.defineProperty(server.request, 'fresh', { configurable: true, get: () => false });
  express.set('query parser', 'simple');
  // Settings the query rules read (Take maximum, range, today's date in RESULTS_TIMEZONE).
  const context: QueryContext = {
    today: () => localDate(config.RESULTS_TIMEZONE),
    takeMax: config.VISITS_TAKE_MAX,
    maxRangeDays: config.VISITS_MAX_RANGE_DAYS,
    zone: config.RESULTS_TIMEZONE,
    changesRetentionDays: config.CHANGES_RETENTION_DAYS,
    now: () => new Date(),
    pageTokens: PageTokens.fromConfig(config),
  };
  server.locals[QUERY_CONTEXT_LOCAL] = context;
  setupSwagger(express, config);
  // Visit pages whose every check was made before, and token requests, are answered ahead of Express (see VisitPagesLane, TokenLane).
  const lanes: LaneSetup = { securityHeaders, trust, queryContext: context, cors: corsOptions ? cors(corsOptions) : null, formParser };
  app.get(VisitPagesLane).install(express.getHttpServer(), lanes);
  app.get(TokenLane).install(express.getHttpServer(), lanes);
  // What Node's HTTP parser refuses gets a problem document too.
  // Every header line is seen, so that a second Host or Authorization cannot hide behind 2000
  // others (Node's default count, past which it drops them); the 16 KiB header limit bounds them.
  express.getHttpServer().maxHeadersCount = 0;
  // An idle kept-alive connection stays open longer than the proxies in front keep theirs
  // (load balancers and ingresses: 60 s): closed first by the service, a connection a proxy is
  // reusing at that moment fails its request with a 502 (Node's default is 5 s).
  express.getHttpServer().keepAliveTimeout = KEEP_ALIVE_MS;
  // A client that closes its side of the connection once it has sent its requests (a TCP
  // half-close: `shutdown(SHUT_WR)`, `nc -N`) still gets their answers, then the connection
  // closes. Node's default drops the requests under way at the client's FIN; the server's
  // `httpAllowHalfOpen` (Node's own switch, not in its typings) keeps them.
  (express.getHttpServer() as { httpAllowHalfOpen?: boolean }).httpAllowHalfOpen = true;
  const logger = app.get(AppLogger);
  const refused = app.get(MetricsService).refused;
  answerClientErrors(
    express.getHttpServer(),
    TOKEN_PATH,
    (fields, message, status) => {
      logger.infoFields(fields, message);
      refused.inc({ status: String(status) });
    },
    lanes.cors,
  );
  // `Expect: 100-continue` is answered when the body is read: a request refused before then is not sent its body.
  continueOnRead(express.getHttpServer());
  return express;
}
