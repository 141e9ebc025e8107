import type { IncomingMessage } from 'node:http';

/**
 * Whether the request's If-Range is one the file server behind Swagger UI (send) would hold by
 * a weaker test than RFC 9110 §13.1.5's, which holds only a strong tag equal to the current
 * one, or a date equal to its Last-Modified:
 * - a weak tag (`W/"…"`) never passes the strong comparison, but send looked for it as a
 *   substring of its own weak ETag, and answered with a 206: a part of the identity file under
 *   a tag that the br and gzip forms share, which a client holding the start of a compressed
 *   body would splice into wrong bytes;
 * - a date passed send when the file was modified at or before it, not only at it: a client
 *   holding another version of the file (a clock of its own, a date it made up) got a part of
 *   this one to splice into it.
 * A strong tag (`"…"`) is never send's, whose tags are weak: send refuses it as it should.
 */
export function ifRangeIsUncertain(headers: IncomingMessage['headers']): boolean {
  const ifRange = headers['if-range'];
  return typeof ifRange === 'string' && !ifRange.trimStart().startsWith('"');
}

/** Leaves out a Range whose If-Range cannot be held as RFC 9110 holds it (see ifRangeIsUncertain), so that the whole representation is sent. */
export function dropRangeOfUncertainIfRange(req: IncomingMessage): void {
  if (req.headers.range !== undefined && ifRangeIsUncertain(req.headers)) delete req.headers.range;
}
