import type { Request, Response } from 'express';

/**
 * Sets the response's validator and answers 304 Not Modified when the request's
 * If-None-Match matches it: weak comparison, a list of tags or `*` (RFC 9110 §13.1.2), as
 * Express's `req.fresh` decides it. True when the 304 was sent and nothing more is to be done.
 * Call it once the response carries every header the 200 would (a 304 repeats them, Vary
 * included), before the body is prepared.
 */
export function answeredNotModified(req: Request, res: Response, etag: string): boolean {
  res.setHeader('ETag', etag);
  if (!req.fresh) return false;
  res.status(304).end();
  return true;
}
