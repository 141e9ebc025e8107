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
