import type { IncomingMessage, ServerResponse } from 'node:http';
import vary from 'vary';
import { sendBody } from '../common/compression.js';
import { answeredNotModified } from '../common/conditional-get.js';
import type { CompressedPages } from './compressed-pages.js';
import type { VisitsPage } from './visits.service.js';

/**
 * The page bytes as rendered, with a validator: a partner re-requesting unchanged data gets a
 * 304. The ETag is weak and the same in every coding, so If-None-Match matches whichever
 * coding the partner got; the 304 carries the Vary of the 200 it stands for. `sending` is
 * told the bytes that go out (see PagesInFlight).
 */
export function sendVisitsPage(
  req: IncomingMessage,
  res: ServerResponse,
  page: VisitsPage,
  compressed: CompressedPages,
  sending: (sent: Buffer) => void,
): Promise<void> {
  res.setHeader('Cache-Control', 'private, no-cache');
  vary(res, 'Accept-Encoding');
  if (answeredNotModified(req, res, page.etag)) return Promise.resolve();
  res.statusCode = 200;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  return sendBody(req, res, page.body, {
    compressed: (encoding) => compressed.get(page.etag, page.body, encoding),
    sending,
  });
}
