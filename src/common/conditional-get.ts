import type { IncomingMessage, ServerResponse } from 'node:http';
import fresh from 'fresh';

/**
 * Sets the response's validator and answers 304 Not Modified when the request's
 * If-None-Match matches it: weak comparison, a list of tags or `*` (RFC 9110 §13.1.2), as
 * Express's `req.fresh` decides it (GET or HEAD, a 2xx or 304 status so far). True when the
 * 304 was sent and nothing more is to be done. Call it once the response carries every
 * header the 200 would (a 304 repeats them, Vary included), before the body is prepared.
 */
export function answeredNotModified(req: IncomingMessage, res: ServerResponse, etag: string): boolean {
  res.setHeader('ETag', etag);
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const status = res.statusCode;
  if (!((status >= 200 && status < 300) || status === 304)) return false;
  const lastModified = res.getHeader('Last-Modified');
  if (!fresh(req.headers, { etag, 'last-modified': typeof lastModified === 'string' ? lastModified : undefined })) return false;
  res.statusCode = 304;
  res.end();
  return true;
}
