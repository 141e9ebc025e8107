import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request } from 'express';
import type { LevelWithSilent } from 'pino';
import { pinoHttp, type HttpLogger } from 'pino-http';
import type { AppConfig } from '../config/app-config.js';
import { routeOf } from '../metrics/request-metrics.middleware.js';

const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Paths redacted from every log line: credentials never reach the logs. */
export const REDACTED_PATHS = [
  'req.headers.authorization',
  'req.headers["svc-api-key"]',
  'req.headers.cookie',
  'req.body.client_secret',
  'client_secret',
  'clientSecret',
  'apiKey',
  // Webhook signing secrets (the CLI prints a new one once; nothing logs one).
  'secret',
  'previousSecret',
];

type Locals = { locals?: Record<string, unknown> };

/**
 * Fields known only once the request is answered: the route template, the caller's client
 * id and, on errors, the problem instance id. They are added to the completion line only
 * (binding them to the request's logger as well would write each key twice).
 */
function completionFields(req: IncomingMessage, res: ServerResponse): Record<string, unknown> {
  const locals = (res as ServerResponse & Locals).locals ?? {};
  return { route: routeOf(req as Request), clientId: locals.clientId, problemInstance: locals.problemInstance };
}

/**
 * The pino-http request logger: one JSON line per request with method, URL, route, status,
 * duration, request id (accepted from `X-Request-Id` or generated, and echoed), the
 * caller's client id and, on errors, the problem instance id. Its `logger` is the root
 * logger of the process.
 */
export function createRequestLogger(config: AppConfig): HttpLogger {
  return pinoHttp<IncomingMessage, ServerResponse, never>({
    level: config.LOG_LEVEL,
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
    genReqId: (req: IncomingMessage, res: ServerResponse) => {
      const given = req.headers['x-request-id'];
      const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
      res.setHeader('X-Request-Id', id);
      return id;
    },
    customSuccessObject: (req, res, fields: object) => ({ ...completionFields(req, res), ...fields }),
    customErrorObject: (req, res, _error, fields: object) => ({ ...completionFields(req, res), ...fields }),
    serializers: {
      req: (req: { id: unknown; method: string; url: string }) => ({ id: req.id, method: req.method, url: req.url }),
      res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
    },
    customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error): LevelWithSilent => (err || res.statusCode >= 500 ? 'error' : 'info'),
  });
}
