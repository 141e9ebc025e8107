import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/**
 * Gives an answer that shared caches keep and serve to everyone (`Cache-Control: public`, such
 * as the discovery documents) a request id of its own instead of the caller's. A CDN or a
 * corporate proxy stores the answer with its headers, so an echoed `X-Request-Id` (a partner's
 * job or trace id) would be served to every other partner until the copy expired, and quoted by
 * them as their own. The log line and any problem keep the id the answer carries (`req.id`).
 */
export function ownRequestId(req: IncomingMessage, res: ServerResponse): void {
  const id = randomUUID();
  (req as IncomingMessage & { id?: string }).id = id;
  res.setHeader('X-Request-Id', id);
}
