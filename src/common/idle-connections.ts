import { ServerResponse, type IncomingMessage, type Server } from 'node:http';
import type { Socket } from 'node:net';

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
 * Closes the server's idle connections, as `server.closeIdleConnections()` does, except one
 * whose answer is ended but still being written. Node counts such a connection idle once the
 * answer's `end()` was called (`finished`), and destroying it drops what the process still
 * holds of the answer: a slow reader of a large page got a cut body. Such a connection is left
 * to finish writing (call this again once its answer's `finish` has come).
 */
export function closeIdleConnections(server: Server, connections: ReadonlySet<Socket>): void {
  const writing: ServerResponse<IncomingMessage>[] = [];
  for (const socket of connections) {
    const res = (socket as Socket & { _httpMessage?: unknown })._httpMessage;
    if (res instanceof ServerResponse && res.finished && !res.writableFinished) writing.push(res as ServerResponse<IncomingMessage>);
  }
  // Node skips a connection whose answer is not `finished`: these are, for the call's length.
  for (const res of writing) res.finished = false;
  try {
    server.closeIdleConnections();
  } finally {
    for (const res of writing) res.finished = true;
  }
}

/**
 * Closes the connections that carry no request: idle kept-alive ones (as closeIdleConnections
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
