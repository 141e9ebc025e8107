import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { pino, type DestinationStream, type Level, type Logger } from 'pino';
import { holdsCredential, loggableUrl } from '../common/loggable-url.js';
import { whenEnded } from '../common/response-gone.js';
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
  // A failed statement's values (TypeORM's QueryFailedError, and the driver's error it wraps),
  // which the error's line carries with its own properties: a partner's data, a client secret's
  // hash, an image's bytes (megabytes of a line). The statement itself is kept.
  'err.parameters',
  'err.driverError.parameters',
  // PostgreSQL's DETAIL of a failed statement repeats its values (`Failing row contains (…)` of
  // a check constraint, `Key (code)=(…) already exists`): the error's message and its
  // constraint, table and column say what failed, without them. (A ProblemException's detail
  // is its message too.)
  'err.detail',
  'err.driverError.detail',
];

/** The root logger of the process: JSON lines on stdout (or `destination`), credentials redacted. */
export function createRootLogger(config: Pick<AppConfig, 'LOG_LEVEL'>, destination?: DestinationStream): Logger {
  const options = { level: config.LOG_LEVEL, redact: { paths: REDACTED_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * One JSON line per request, written when its response ends: `req` (request id, method,
 * URL), `res` (status), `responseTime` in ms, the route template, the caller's client id and,
 * on errors, the problem instance id; `request completed` at info, at warn for a 503 and at
 * error for another 5xx status, and `request aborted` (with `aborted: true`) at warn when the
 * connection closed before the response was complete. The request id is taken from `X-Request-Id` when it is a plain token, generated
 * otherwise, and echoed in `X-Request-Id`.
 *
 * Nothing is built for a line the level leaves out: a request costs an id, a header and a
 * listener (a per-request child logger with its serializers, as pino-http makes one, cost a
 * tenth of the CPU of a cached page at LOG_LEVEL=warn).
 */
/** Requests of this process whose line is not written yet, and what waits for them all to be. */
let unlogged = 0;
let waiting: (() => void)[] = [];

/**
 * Resolves once every request under way has its line, or after `maxMs`: at the end of the
 * shutdown grace, the connections closed then end their requests a moment later, and their
 * lines (`aborted`) would be lost to the process's exit.
 */
export function allRequestsLogged(maxMs: number): Promise<void> {
  if (unlogged === 0) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, maxMs);
    waiting.push(() => {
      clearTimeout(timer);
      resolve();
    });
  });
}

export function requestLogger(root: Logger): (req: IncomingMessage, res: ServerResponse, next: () => void) => void {
  // Requests whose line is under way: one started before Express (see VisitPagesLane) is not started again.
  const started = new WeakSet<IncomingMessage>();
  return (req, res, next) => {
    if (started.has(req)) return next();
    started.add(req);
    unlogged++;
    const given = req.headers['x-request-id'];
    // One that is a credential by its form (an API key or a token pasted in the wrong header) is
    // neither logged nor echoed: the request gets an id of its own.
    const id = typeof given === 'string' && REQUEST_ID.test(given) && !holdsCredential(given) ? given : randomUUID();
    (req as IncomingMessage & { id?: string }).id = id;
    res.setHeader('X-Request-Id', id);
    const since = performance.now();
    const url = req.url ?? '';
    // A response whose client did not take it whole (gone, or cut off by the stall rule or the
    // shutdown's grace) has its line say it was aborted.
    whenEnded(res, (whole) => {
      logged();
      const aborted = !whole;
      // A 503 says the service cannot answer for now (a database away, a replica not ready or
      // draining): a warning, as readiness probes see it every few seconds during a rollout. A
      // connection closed before the response was complete is no error of the service either.
      const unavailable = res.statusCode === 503;
      const level: Level = res.statusCode >= 500 && !unavailable ? 'error' : aborted || unavailable ? 'warn' : 'info';
      if (!root.isLevelEnabled(level)) return;
      const locals = (res as { locals?: { clientId?: unknown; problemInstance?: unknown; writtenStatus?: number } }).locals ?? {};
      const line = {
        route: routeOf(req),
        clientId: locals.clientId,
        problemInstance: locals.problemInstance,
        // The id the answer carried: a shared answer is given one of its own (src/common/shared-answer.ts).
        req: { id: (req as IncomingMessage & { id?: string }).id ?? id, method: req.method, url: loggableUrl(url) },
        // No status was sent for a request cut off before its answer began (the client went, or
        // the shutdown's grace ended while its body was still coming): null, not the 200 Node presets.
        res: { statusCode: res.headersSent ? res.statusCode : (locals.writtenStatus ?? null) },
        responseTime: Math.round(performance.now() - since),
        ...(aborted ? { aborted: true } : {}),
      };
      root[level](line, aborted ? 'request aborted: the connection closed before the response was complete' : 'request completed');
    });
    next();
  };
}

/** One request's line is written (or left out by the level). */
function logged(): void {
  if (--unlogged > 0 || waiting.length === 0) return;
  const resolved = waiting;
  waiting = [];
  for (const resolve of resolved) resolve();
}
