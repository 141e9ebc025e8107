import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { Module } from '@nestjs/common';
import { LoggerModule } from 'nestjs-pino';
import type { Request } from 'express';
import { AppConfig } from '../config/app-config.js';
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
];

type Locals = { locals?: Record<string, unknown> };

/**
 * JSON lines through pino: one line per request with method, route, status, duration,
 * request id (accepted from `X-Request-Id` or generated, and echoed), the caller's
 * client id and, on errors, the problem instance id.
 */
@Module({
  imports: [
    LoggerModule.forRootAsync({
      inject: [AppConfig],
      useFactory: (config: AppConfig) => ({
        pinoHttp: {
          level: config.LOG_LEVEL,
          redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
          genReqId: (req: IncomingMessage, res: ServerResponse) => {
            const given = req.headers['x-request-id'];
            const id = typeof given === 'string' && REQUEST_ID.test(given) ? given : randomUUID();
            res.setHeader('X-Request-Id', id);
            return id;
          },
          customProps: (req: IncomingMessage, res: ServerResponse) => {
            const locals = (res as ServerResponse & Locals).locals ?? {};
            return {
              route: routeOf(req as Request),
              clientId: locals.clientId,
              problemInstance: locals.problemInstance,
            };
          },
          serializers: {
            req: (req: { id: unknown; method: string; url: string }) => ({
              id: req.id,
              method: req.method,
              url: req.url,
            }),
            res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
          },
          customLogLevel: (_req: IncomingMessage, res: ServerResponse, err?: Error) =>
            err || res.statusCode >= 500 ? 'error' : 'info',
        },
      }),
    }),
  ],
})
export class LoggingModule {}
