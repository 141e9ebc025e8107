import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';
import { lingerAfterResponse } from './body-drain.js';

/** The server's open connections, kept up to date as they come and close. */
export function openConnections(server: Server): ReadonlySet<Socket> {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  return open;
}

/**
 * Stops the server listening, as `server.close()` does, and resolves once every connection has
 * closed. Node's close() first closes the idle connections with its own closeIdleConnections,
 * which count a connection idle once its answer's `end()` was called (`finished`) and destroy
 * it with what the process still holds of the answer: a slow reader of a large page got a cut
 * body. Such a connection is left to finish writing.
 */
export function closeServer(server: Server, connections: ReadonlySet<Socket>): Promise<void> {
  return new Promise((resolve) => keepingAnswersBeingWritten(connections, () => server.close(() => resolve())));
}

/** Runs `work` with the connections whose ended answer is still being written counted busy by Node. */
function keepingAnswersBeingWritten(connections: ReadonlySet<Socket>, work: () => void): void {
  const writing: ServerResponse<IncomingMessage>[] = [];
  for (const socket of connections) {
    const res = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    if (res instanceof ServerResponse && res.finished && !res.writableFinished) writing.push(res as ServerResponse<IncomingMessage>);
  }
  // Node skips a connection whose answer is not `finished`: these are, for the call's length.
  for (const res of writing) res.finished = false;
  try {
    work();
  } finally {
    for (const res of writing) res.finished = true;
  }
}

/**
 * A shutdown's drain: the server stops listening, the connections that carry no request close
 * at once, and every request under way is answered; resolves once every connection has closed.
 * - A request still to be answered (its head has come) gets `Connection: close`; a body still
 *   coming when its answer is written is read and dropped for up to `lingerMs` while the
 *   connection closes, so the client gets the answer rather than a reset.
 * - An answer already on its way said `keep-alive`: its client may send its next request as
 *   soon as it has read it, and closing the connection once the answer was written reset that
 *   request (ECONNRESET, no answer). The connection waits for it about `lingerMs` instead
 *   (Node's keep-alive timeout, which Node lengthens by a second of its own), and answers it
 *   with `Connection: close`.
 * - A request that comes on a kept-alive connection during the drain is answered with
 *   `Connection: close` too, and its connection ends after the answer.
 */
export function drainConnections(server: Server, connections: ReadonlySet<Socket>, lingerMs: number): Promise<void> {
  server.keepAliveTimeout = Math.max(1, lingerMs - 1000);
  const drained = closeServer(server, connections);
  closeConnectionsWithoutRequest(connections);
  server.prependListener('request', (_req: IncomingMessage, res: ServerResponse) => {
    res.shouldKeepAlive = false;
  });
  for (const socket of connections) {
    const res = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    if (!(res instanceof ServerResponse) || res.headersSent) continue;
    res.shouldKeepAlive = false;
    const req = (res as ServerResponse & { req?: IncomingMessage }).req;
    if (req && !req.complete) lingerAfterResponse(req, lingerMs, { readNow: false });
  }
  return drained;
}

/**
 * Closes the connections that carry no request: idle kept-alive ones (as Node's closeIdleConnections
 * does), none read yet (a proxy's connection opened ahead of need) and one whose head has only
 * begun to arrive. Node counts the last two busy, so the shutdown would wait the whole grace
 * period for them. A request whose head has come (being answered, its body read, or its ended
 * answer still being written) has its response on the connection and stays.
 */
export function closeConnectionsWithoutRequest(connections: ReadonlySet<Socket>): void {
  for (const socket of connections) {
    if (!((socket as Socket & { _httpMessage?: unknown })._httpMessage instanceof ServerResponse)) socket.destroy();
  }
}
