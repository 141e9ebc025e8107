import type { IncomingMessage } from 'node:http';

export interface DrainBound {
  /** Stop after this many more bytes of the body. */
  maxBytes: number;
  /** Stop after this long, however much was read. */
  maxMs: number;
}

/**
 * Reads what is left of a request body and drops it, until the body ends or the bound is
 * reached; resolves true when the whole body was read. The request keeps flowing afterwards,
 * so what still arrives is dropped too.
 */
export function discardBody(request: IncomingMessage, bound: DrainBound): Promise<boolean> {
  return new Promise((resolve) => {
    if (request.complete || request.readableEnded || request.destroyed) {
      request.resume();
      resolve(request.complete);
      return;
    }
    let read = 0;
    const finish = (): void => {
      clearTimeout(timer);
      request.off('data', onData).off('end', finish).off('close', finish);
      resolve(request.complete);
    };
    const onData = (chunk: Buffer): void => {
      read += chunk.length;
      if (read > bound.maxBytes) finish();
    };
    // A bound, not work to wait for: it never keeps the process alive by itself.
    const timer = setTimeout(finish, bound.maxMs).unref();
    request.on('data', onData).once('end', finish).once('close', finish);
    request.resume();
  });
}

/**
 * A lingering close for a response sent before the request body was read to its end (a body
 * refused while it streams, or by its declared length). Node closes the connection as soon
 * as such a response (`Connection: close`) is written; the kernel then answers the data the
 * client is still sending with a reset, and a client that is still writing (Node's fetch,
 * for one) fails with ECONNRESET or EPIPE before it reads the response. Instead, the
 * connection is half-closed after the response, and whatever the client still sends is read
 * and dropped until it closes its side, or `maxMs` have passed.
 */
export function lingerAfterResponse(request: IncomingMessage, maxMs: number, { readNow = true }: { readNow?: boolean } = {}): void {
  const socket = request.socket;
  // Node's HTTP server calls destroySoon() once the last response on the connection is written.
  socket.destroySoon = (): void => {
    socket.end();
    // A body still being sent is read and dropped from here on, if not from the start.
    if (!readNow) request.resume();
    const timer = setTimeout(() => socket.destroy(), maxMs).unref();
    socket.once('close', () => clearTimeout(timer));
  };
  // From now: what a reader no longer wants (a refused body) is dropped as it comes. Not for a
  // request still being answered, whose handler may yet read its body (readNow false).
  if (readNow) request.resume();
}
