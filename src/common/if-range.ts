import type { IncomingMessage } from 'node:http';

/**
 * Whether the request's If-Range names a weak entity tag (`W/"…"`). RFC 9110 §13.1.5 holds an
 * If-Range tag to strong comparison, which a weak tag never passes: the condition is false, and
 * the Range must be ignored (the whole representation, a 200). The file server behind Swagger
 * UI (send) looks for the tag as a substring of its own weak ETag instead, and answered such a
 * request with a 206: a part of the identity file under a tag that the br and gzip forms share,
 * which a client holding the start of a compressed body would splice into wrong bytes.
 */
export function ifRangeNamesWeakTag(headers: IncomingMessage['headers']): boolean {
  const ifRange = headers['if-range'];
  return typeof ifRange === 'string' && ifRange.trimStart().startsWith('W/');
}

/** Leaves out a Range whose If-Range cannot hold (see ifRangeNamesWeakTag), so that the whole representation is sent. */
export function dropRangeOfWeakIfRange(req: IncomingMessage): void {
  if (req.headers.range !== undefined && ifRangeNamesWeakTag(req.headers)) delete req.headers.range;
}
