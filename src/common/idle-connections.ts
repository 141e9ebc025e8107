import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import { Server as NetServer, type Socket } from 'node:net';
import { lingerAfterResponse } from './body-drain.js';

/**
 * The response to the last request each connection has carried. Requests pipelined behind the
 * one being answered are handed to the application as they come, their responses queued: the
 * last of them is the one whose answer may close the connection. A connection that has one has
 * carried a request: kept alive between requests, its client may send the next at any moment.
 */
const lastResponses = new WeakMap<Socket, ServerResponse>();

/** The server's open connections, kept up to date as they come and close. */
export function openConnections(server: Server): ReadonlySet<Socket> {
  const open = new Set<Socket>();
  server.on('connection', (socket: Socket) => {
    open.add(socket);
    socket.once('close', () => open.delete(socket));
  });
  server.on('request', (req: IncomingMessage, res: ServerResponse) => lastResponses.set(req.socket, res));
  return open;
}

/**
 * Stops the server listening and resolves once every connection has closed, as `server.close()`
 * does without closing the idle connections first. Node's close() closes them with its own
 * closeIdleConnections, which counts a connection idle once its answer's `end()` was called
 * (`finished`) and destroys it with what the process still holds of the answer (a slow reader
 * of a large page got a cut body), and resets a kept-alive connection whose client is sending
 * its next request at that moment: drainConnections closes each in its time.
 */
export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => NetServer.prototype.close.call(server, () => resolve()));
}

/** Responses the drain made the last of their connections: only those it hands on to a request pipelined behind. */
const closing = new WeakSet<ServerResponse>();

/** Makes the response close its connection; one that would have kept it open is remembered in `closing`. */
function closeAfter(res: ServerResponse): void {
  if (res.shouldKeepAlive) closing.add(res);
  res.shouldKeepAlive = false;
}

/**
 * A shutdown's drain: the server stops listening, the connections that carry no request close
 * at once, and every request under way is answered; resolves once every connection has closed.
 * - A request still to be answered (its head has come) gets `Connection: close`, the last one
 *   pipelined on its connection when several are (those before it are answered first), one
 *   pipelined after the drain began included; a body still coming when its answer is written
 *   is read and dropped for up to `lingerMs` while the connection closes, so the client gets
 *   the answer rather than a reset.
 * - An answer already on its way said `keep-alive`: its client may send its next request as
 *   soon as it has read it, and closing the connection once the answer was written reset that
 *   request (ECONNRESET, no answer). The connection waits for it about `lingerMs` instead
 *   (Node's keep-alive timeout, which Node lengthens by a second of its own), and answers it
 *   with `Connection: close`.
 * - A kept-alive connection between two requests waits for the next one as long, and answers it
 *   with `Connection: close` too: closing it at once reset a request its client was sending.
 * - A connection that has carried no request yet closes at once (see closeConnectionsWithoutRequest).
 */
export function drainConnections(server: Server, connections: ReadonlySet<Socket>, lingerMs: number): Promise<void> {
  server.keepAliveTimeout = Math.max(1, lingerMs - 1000);
  const drained = closeServer(server);
  closeConnectionsWithoutRequest(connections, lingerMs);
  server.prependListener('request', (req: IncomingMessage, res: ServerResponse) => {
    // Pipelined behind requests still to be answered: this one's answer closes the connection,
    // not the answer before it (which would leave this request carried out and never answered).
    // The connection's last response so far is still the one before: this listener comes first.
    const before = lastResponses.get(req.socket);
    if (before !== undefined && before !== res && !before.headersSent && closing.has(before)) before.shouldKeepAlive = true;
    closeAfter(res);
  });
  for (const socket of connections) {
    if (!((socket as Socket & { _httpMessage?: unknown })._httpMessage instanceof ServerResponse)) continue;
    // The last request's answer closes the connection, not the one being written now: with
    // requests pipelined behind it, closing after it left theirs unsent, a POST among them
    // carried out and never answered.
    const res = lastResponses.get(socket);
    if (res === undefined || res.headersSent) continue;
    closeAfter(res);
    const req = (res as ServerResponse & { req?: IncomingMessage }).req;
    if (req && !req.complete) lingerAfterResponse(req, lingerMs, { readNow: false });
  }
  return drained;
}

/**
 * Closes the connections that carry no request. One that has carried none yet goes at once:
 * none read (a proxy's connection opened ahead of need) or its first head only begun; Node
 * counts these busy, so the shutdown would wait the whole grace period for them. A kept-alive
 * one between two requests (or with its next head only begun) waits `lingerMs` for its next
 * request before it closes: Node's keep-alive timeout, which a request coming clears. A request
 * whose head has come (being answered, its body read, or its ended answer still being written)
 * has its response on the connection and stays.
 */
export function closeConnectionsWithoutRequest(connections: ReadonlySet<Socket>, lingerMs: number): void {
  for (const socket of connections) {
    if ((socket as Socket & { _httpMessage?: unknown })._httpMessage instanceof ServerResponse) continue;
    if (lastResponses.has(socket)) socket.setTimeout(lingerMs);
    else socket.destroy();
  }
}
