import type { ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** For each connection, what waits for it to close: one listener per connection, however many responses are queued on it. */
const waitingOn = new WeakMap<Socket, Set<() => void>>();

/**
 * Calls `done` once, when the response is finished with: its 'close' (written out, or its
 * connection gone while it was being written), or the close of the connection its request came
 * on. A response queued behind earlier ones on a pipelined connection has no socket yet, and
 * Node never emits its 'close' when the connection goes before its turn: what it holds (a
 * budget, a buffer) would otherwise be held for good. Called at once when the response or that
 * connection is closed already.
 */
export function whenGone(res: ServerResponse, done: () => void): void {
  const socket = (res.req as { socket?: Socket | null } | undefined)?.socket ?? null;
  let called = false;
  const once = (): void => {
    if (called) return;
    called = true;
    if (socket) waitingOn.get(socket)?.delete(once);
    done();
  };
  // Closed already: its 'close' has been emitted.
  if (res.closed) {
    once();
    return;
  }
  res.once('close', once);
  if (!socket) return;
  if (socket.destroyed) {
    once();
    return;
  }
  let waiting = waitingOn.get(socket);
  if (!waiting) {
    const set = new Set<() => void>();
    waiting = set;
    waitingOn.set(socket, set);
    socket.once('close', () => {
      waitingOn.delete(socket);
      for (const gone of [...set]) gone();
    });
  }
  waiting.add(once);
}

/**
 * Calls `done` once the response is finished with (see whenGone), saying whether the client
 * took it whole. 'close' follows 'finish' on every response, and comes alone when the client
 * went away before the response was ended. One ended whose body the connection never took
 * whole (a large page, the client gone or the stall rule closing it) gets 'finish' too, from
 * the socket's destruction (and `writableFinished` then holds): whole only when the socket
 * still stood at 'finish'. A response queued on a pipelined connection that closed before its
 * turn never emits either: it is not whole. The connection is the request's: a response queued
 * behind others has no socket of its own when this is called, and its `writableFinished` holds
 * at a 'finish' that the connection's destruction emitted. One answered on its socket by a
 * refusal of its body is whole once that answer was all written (`locals.answeredOnSocket`).
 */
export function whenEnded(res: ServerResponse, done: (whole: boolean) => void): void {
  // Asked for twice a request (its log line and its metrics): the listeners are one pair.
  const waiting = judging.get(res);
  if (waiting) {
    waiting.push(done);
    return;
  }
  const callbacks = [done];
  judging.set(res, callbacks);
  const socket = (res.req as { socket?: Socket | null } | undefined)?.socket ?? res.socket;
  let whole = false;
  res.once('finish', () => {
    whole = socket === null ? res.writableFinished : !socket.destroyed;
  });
  whenGone(res, () => {
    judging.delete(res);
    // A request whose body the HTTP parser refused while it was read was answered on the
    // socket itself (a 400 or 408, see answerClientErrors): once that answer went out whole,
    // it is the request's whole response.
    const answered = (res as ServerResponse & { locals?: { answeredOnSocket?: boolean } }).locals?.answeredOnSocket === true;
    for (const call of callbacks) call(whole || answered);
  });
}

/** For each response being judged by whenEnded, what waits for its verdict. */
const judging = new WeakMap<ServerResponse, ((whole: boolean) => void)[]>();
