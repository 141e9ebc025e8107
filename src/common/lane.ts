import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { QueryContext } from './query-params.js';
import { cameOverTls, type SecurityHeaders, type TrustProxy } from './security-headers.js';

/** A connect-style middleware as Express runs it. */
export type Middleware = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/**
 * What the lanes (requests answered before Express, see putAhead) share with the HTTP setup,
 * so that their answers are the ones Express's path gives.
 */
export interface LaneSetup {
  securityHeaders: SecurityHeaders;
  /** Express's compiled `trust proxy` (for whether a request came over TLS). */
  trust: TrustProxy;
  /** The settings the query rules read. */
  queryContext: QueryContext;
  /** The CORS middleware Express runs, when CORS is on (it sets its headers synchronously). */
  cors: Middleware | null;
  /** The form body parser Express runs (see keepingBodyErrors and readBodyAhead). */
  formParser: Middleware;
}

type Listener = (req: IncomingMessage, res: ServerResponse) => void;

/** The callback the lanes give the request line and metrics middlewares, which call it at once. */
export const nothing = (): void => undefined;

/**
 * Puts a lane in front of the server's request listener (Express's application, or a lane
 * put there before): a request `route` recognises is given to `answer`, which either answers
 * it and gives true, or gives false with nothing written, and the request then goes on to the
 * listener behind. Every other request goes there at once.
 */
export function putAhead<R>(
  server: Server,
  route: (req: IncomingMessage, res: ServerResponse) => R | undefined,
  answer: (req: IncomingMessage, res: ServerResponse, route: R) => Promise<boolean>,
): void {
  const listeners = server.listeners('request') as Listener[];
  if (listeners.length !== 1) throw new Error(`expected one request listener (Express), found ${listeners.length}`);
  const [behind] = listeners as [Listener];
  server.removeListener('request', behind);
  server.on('request', (req: IncomingMessage, res: ServerResponse) => {
    const taken = route(req, res);
    if (taken === undefined) return behind(req, res);
    answer(req, res, taken).then(
      (answered) => {
        if (!answered) behind(req, res);
      },
      // answer() catches what its steps throw; should anything escape it, the request is not left hanging.
      (error: unknown) => (res.headersSent ? res.destroy(error instanceof Error ? error : undefined) : behind(req, res)),
    );
  });
}

/** The path of a request's URL, without its query. */
export function pathOf(req: Pick<IncomingMessage, 'url'>): string {
  const url = req.url ?? '';
  const at = url.indexOf('?');
  return at < 0 ? url : url.slice(0, at);
}

/** The media type of a form (the token request's body). */
export const FORM_TYPE = 'application/x-www-form-urlencoded';

/**
 * Whether a Content-Type names a form, whatever its parameters; whether a body came with it
 * is not asked (Express's `req.is` gives null without one, though a request with neither
 * Content-Length nor Transfer-Encoding has a body: an empty one, RFC 9112 §6.3).
 */
export function namesForm(contentType: string | undefined): boolean {
  if (contentType === undefined) return false;
  const semicolon = contentType.indexOf(';');
  return (semicolon < 0 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase() === FORM_TYPE;
}

/** What Express's middlewares give every response of a lane besides the request line: the security and CORS headers. */
export function setAnswerHeaders(req: IncomingMessage, res: ServerResponse, setup: LaneSetup): void {
  setup.securityHeaders.set(res, cameOverTls(req, setup.trust));
  setup.cors?.(req, res, nothing);
}
