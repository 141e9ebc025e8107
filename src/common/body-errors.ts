import type { IncomingMessage, ServerResponse } from 'node:http';
import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { lingerAfterResponse } from './body-drain.js';
import { declineContinue } from './expect-continue.js';
import type { Middleware } from './lane.js';

/** How long a connection whose body was refused unread stays half-open for the client to read the answer (see lingerAfterResponse). */
const LINGER_MS = 10_000;

/** What a body parser reads: bodies of one media type (its essence, in lower case), of at most `limit` bytes. */
export interface BodyRule {
  type: string;
  limit: number;
}

/** Why a request's body could not be read (malformed, too large, a charset not supported), kept until the guards run. */
const failures = new WeakMap<IncomingMessage, Error>();

/**
 * A body parser whose failure is kept for BodyErrorGuard instead of answered at once: the
 * request then goes through the rate limit like any other (it counts, and its 400 or 413
 * carries the limit's headers) before the failure is its answer.
 *
 * Only a POST's body is read: no route takes a body with another method, and a GET's has no
 * meaning (RFC 9110 §9.3.1), so it changes nothing of the answer (Node drops it unread). A body
 * of the parser's type over its limit is refused without being read to its end, as body-parser
 * would read it (every byte, however many, before its 413): one declared larger is not read at
 * all (nor asked for with a 100 Continue), one that streams on is cut at twice the limit (room
 * for a content coding's own bytes). The connection then closes after the answer, lingering
 * for the client to read it (see lingerAfterResponse).
 *
 * The wrapper keeps the parser's function name: Nest adds a JSON and a form parser of its own
 * at start-up unless it finds middlewares named `jsonParser` and `urlencodedParser`.
 */
export function keepingBodyErrors(parser: Middleware, rule: BodyRule): Middleware {
  const wrapper: Middleware = (req, res, next) => {
    // Another media type is another parser's (or a route's own reader's, the upload's), as body-parser judges it.
    if (req.method !== 'POST' || failures.has(req) || mediaType(req) !== rule.type) {
      next();
      return;
    }
    // RFC 9110 §8.4.1.3: a recipient should take x-gzip as gzip; body-parser knows only the latter.
    if (req.headers['content-encoding']?.trim().toLowerCase() === 'x-gzip') req.headers['content-encoding'] = 'gzip';
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > rule.limit) {
      refuseUnread(req, res, rule.limit);
      next();
      return;
    }
    let done = false;
    let received = 0;
    const onData = (chunk: Buffer): void => {
      received += chunk.length;
      if (received <= 2 * rule.limit || done) return;
      done = true;
      req.off('data', onData);
      refuseUnread(req, res, rule.limit);
      next();
    };
    req.on('data', onData);
    parser(req, res, (error?: unknown) => {
      req.off('data', onData);
      if (done) return;
      done = true;
      keep(req, error, next);
    });
  };
  Object.defineProperty(wrapper, 'name', { value: parser.name });
  return wrapper;
}

/** The essence of the request's media type, in lower case ('' without one). */
function mediaType(req: IncomingMessage): string {
  const type = req.headers['content-type'] ?? '';
  const semicolon = type.indexOf(';');
  return (semicolon < 0 ? type : type.slice(0, semicolon)).trim().toLowerCase();
}

/** A failure to read the body, kept for BodyErrorGuard. */
function keep(req: IncomingMessage, error: unknown, next: (error?: unknown) => void): void {
  if (error !== undefined && error !== null) failures.set(req, error instanceof Error ? error : new Error('the request body could not be read'));
  next();
}

/** The body refused as too large before it was read to its end: the answer closes the connection, and no 100 Continue asks for the rest. */
function refuseUnread(req: IncomingMessage, res: ServerResponse, limit: number): void {
  failures.set(req, Object.assign(new Error('request entity too large'), { status: 413, type: 'entity.too.large', limit }));
  res.setHeader('Connection', 'close');
  declineContinue(req);
  lingerAfterResponse(req, LINGER_MS);
}

/**
 * Reads a request's body with `parser` (one keepingBodyErrors made, the one Express runs)
 * before Express sees the request, for a lane that answers it. Gives the parsed body, or
 * undefined when there is none or it could not be read (the failure is then kept for
 * BodyErrorGuard, as on Express's path). When the lane hands the request on, Express's body
 * parsers pass a body read by, as body-parser does for any request whose stream is used up, and
 * one whose failure is kept.
 */
export function readBodyAhead(parser: Middleware, req: IncomingMessage, res: ServerResponse): Promise<unknown> {
  return new Promise((resolve) => {
    parser(req, res, () => {
      resolve(failures.has(req) ? undefined : (req as IncomingMessage & { body?: unknown }).body);
    });
  });
}

/**
 * The global guard right after the rate limit: a request whose body could not be read is
 * refused with what the body parser found (problem+json, 400, 413 or 415), before the
 * credentials are looked at, as when the parser answered it itself.
 */
@Injectable()
export class BodyErrorGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    const failure = failures.get(context.switchToHttp().getRequest<IncomingMessage>());
    if (failure !== undefined) throw failure;
    return true;
  }
}
