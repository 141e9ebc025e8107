import type { IncomingMessage, ServerResponse } from 'node:http';
import helmet from 'helmet';

/** Express's compiled `trust proxy` setting: whether the hop at `address` (the `i`th from the socket) is trusted. */
export type TrustProxy = (address: string | undefined, i: number) => boolean;

/**
 * Whether a request came over TLS, as Express's `req.secure` decides it: the connection
 * itself, or the first `X-Forwarded-Proto` value when the connecting address is a proxy
 * that TRUST_PROXY trusts.
 */
export function cameOverTls(req: IncomingMessage, trust: TrustProxy): boolean {
  const own = 'encrypted' in req.socket && req.socket.encrypted === true ? 'https' : 'http';
  if (!trust(req.socket.remoteAddress, 0)) return own === 'https';
  const header = req.headers['x-forwarded-proto'];
  const proto = typeof header === 'string' && header !== '' ? header : own;
  const comma = proto.indexOf(',');
  return (comma < 0 ? proto : proto.slice(0, comma)).trim() === 'https';
}

/** The headers a middleware that sets the same headers on every response sets, found by running it once. */
function headersOf(middleware: (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void): [string, string][] {
  const headers: [string, string][] = [];
  const recorder = { setHeader: (name: string, value: unknown) => headers.push([name, String(value)]), removeHeader: () => undefined };
  let done = false;
  middleware({} as IncomingMessage, recorder as unknown as ServerResponse, () => (done = true));
  if (!done) throw new Error('the security headers middleware did not finish synchronously');
  return headers;
}

/**
 * The security headers of every response. The CSP lets Swagger UI (its own script and
 * inline styles) work at /docs. HSTS and upgrade-insecure-requests only on requests that
 * came over TLS: over plain http they would make the browser fetch Swagger UI's scripts
 * over https, from a port that speaks none, and pin the host to https (a blank page at
 * http://<address>:3000/docs).
 *
 * Helmet's headers do not depend on the request: they are worked out once, then set on each
 * response (running its dozen middlewares per request cost 0.09 ms of CPU, a sixth of a
 * cached page).
 */
export class SecurityHeaders {
  private readonly tls: [string, string][];
  private readonly plain: [string, string][];

  constructor() {
    const directives = {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'"],
      styleSrc: ["'self'", "'unsafe-inline'"],
      // blob: for the images Swagger UI draws from a response (GET /menus/dishes/images/{imageId}).
      imgSrc: ["'self'", 'data:', 'blob:'],
      fontSrc: ["'self'", 'data:'],
      connectSrc: ["'self'"],
      objectSrc: ["'none'"],
      frameAncestors: ["'none'"],
      baseUri: ["'self'"],
      formAction: ["'self'"],
    };
    this.tls = headersOf(helmet({ contentSecurityPolicy: { directives: { ...directives, upgradeInsecureRequests: [] } } }));
    this.plain = headersOf(
      helmet({ contentSecurityPolicy: { directives: { ...directives, upgradeInsecureRequests: null } }, strictTransportSecurity: false }),
    );
  }

  /** Sets the headers of a response to a request that came over TLS (`secure`) or not. */
  set(res: ServerResponse, secure: boolean): void {
    for (const [name, value] of secure ? this.tls : this.plain) res.setHeader(name, value);
  }
}
