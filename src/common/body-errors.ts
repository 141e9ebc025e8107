import type { IncomingMessage, ServerResponse } from 'node:http';
import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import type { Middleware } from './lane.js';

/** Why a request's body could not be read (malformed, too large, a charset not supported), kept until the guards run. */
const failures = new WeakMap<IncomingMessage, Error>();

/**
 * A body parser whose failure is kept for BodyErrorGuard instead of answered at once: the
 * request then goes through the rate limit like any other (it counts, and its 400 or 413
 * carries the limit's headers) before the failure is its answer.
 *
 * The wrapper keeps the parser's function name: Nest adds a JSON and a form parser of its own
 * at start-up unless it finds middlewares named `jsonParser` and `urlencodedParser`.
 */
export function keepingBodyErrors(parser: Middleware): Middleware {
  const wrapper: Middleware = (req, res, next) =>
    parser(req, res, (error?: unknown) => {
      if (error !== undefined && error !== null) failures.set(req, error instanceof Error ? error : new Error('the request body could not be read'));
      next();
    });
  Object.defineProperty(wrapper, 'name', { value: parser.name });
  return wrapper;
}

/**
 * Reads a request's body with `parser` (one keepingBodyErrors made, the one Express runs)
 * before Express sees the request, for a lane that answers it. Gives the parsed body, or
 * undefined when there is none or it could not be read (the failure is then kept for
 * BodyErrorGuard, as on Express's path). When the lane hands the request on, Express's body
 * parsers pass a body read (or drained after a failure) by, as body-parser does for any request
 * whose stream is used up; one refused unread (a charset not supported) is refused again alike.
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
