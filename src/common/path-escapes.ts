import type { NextFunction, Request, Response } from 'express';

/** A path segment that decodeURIComponent refuses: a `%` not followed by two hex digits, or escapes that are no UTF-8. */
function decodable(segment: string): boolean {
  try {
    decodeURIComponent(segment);
    return true;
  } catch {
    return false;
  }
}

/**
 * Rewrites each segment of the request's path that cannot be decoded (`/menus/dishes/images/%zz`)
 * so that it decodes to its own text (its `%` written as `%25`). Express's router would
 * otherwise refuse the request with its own 400 ("Failed to decode param") before the guards,
 * unauthenticated and uncounted; so rewritten, it reaches the route, whose checks come after
 * the API key, the token and the rate limit (an image id that is no image id is a 404).
 */
export function repairPathEscapes(req: Request, _res: Response, next: NextFunction): void {
  const url = req.url;
  const end = url.indexOf('?');
  const path = end < 0 ? url : url.slice(0, end);
  if (path.includes('%')) {
    const segments = path.split('/');
    if (!segments.every(decodable)) {
      req.url = segments.map((s) => (decodable(s) ? s : s.replaceAll('%', '%25'))).join('/') + (end < 0 ? '' : url.slice(end));
    }
  }
  next();
}

/** An escape in a request target: `%` and two hex digits. */
const ESCAPE = /%([0-9A-Fa-f]{2})/g;

/** Whether a character is unreserved in a URI (RFC 3986 §2.3): its escape means it. */
function unreserved(code: number): boolean {
  return (
    (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || (code >= 0x30 && code <= 0x39) || code === 0x2d || code === 0x2e || code === 0x5f || code === 0x7e
  );
}

/**
 * The request target with the escapes of unreserved characters in its path written as the
 * characters (RFC 3986 §6.2.2.2: `/%62ranches` is `/branches`), so that every route, the ones
 * answered ahead of Express too, sees one spelling of a path. Other escapes (`%2F`, `%20`)
 * and the query are left as they are.
 */
export function unescapeUnreserved(url: string): string {
  // Run for every request: most have no escape in their path, and cost two searches.
  const escape = url.indexOf('%');
  if (escape < 0) return url;
  const end = url.indexOf('?');
  if (end >= 0 && escape > end) return url;
  const path = end < 0 ? url : url.slice(0, end);
  const normal = path.replace(ESCAPE, (escape, hex: string) => {
    const code = parseInt(hex, 16);
    return unreserved(code) ? String.fromCharCode(code) : escape;
  });
  return normal === path ? url : normal + (end < 0 ? '' : url.slice(end));
}

/**
 * A request path as Express's router matches it to a route's: in any case, and with or without
 * one trailing slash (`/Connect/Token/` is `/connect/token`). Give it a path whose unreserved
 * escapes are written out (see unescapeUnreserved), without its query.
 */
export function routeSpelling(path: string): string {
  return path.toLowerCase().replace(/(.)\/$/, '$1');
}
