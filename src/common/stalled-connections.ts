import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Whether a connection has stopped taking the bytes written to it: fed what it has taken so
 * far and what still waits for it, it says so once nothing more was taken for `ms` while
 * bytes waited. Bytes taken, or none waiting, start the time afresh.
 */
export class StallClock {
  private since: number;

  constructor(
    private taken: number,
    now: number,
    private readonly ms: number,
  ) {
    this.since = now;
  }

  stalled(taken: number, waiting: number, now: number): boolean {
    if (taken !== this.taken || waiting === 0) {
      this.taken = taken;
      this.since = now;
      return false;
    }
    return now - this.since >= this.ms;
  }
}

/**
 * Bytes written to a socket that the connection has not taken yet: in the stream's buffer,
 * and handed to libuv but not to the kernel (its handle's `writeQueueSize`, the figure Node's
 * own socket timeout weighs; a large body is handed over in one write, which libuv sends as
 * the connection takes it).
 */
function waiting(socket: Socket): number {
  return socket.writableLength + ((socket as Socket & { _handle?: { writeQueueSize?: number } | null })._handle?.writeQueueSize ?? 0);
}

/**
 * Closes the response's connection once it has taken none of the bytes written to it for
 * `ms`, looking every tenth of that (at most every second), until the response closes.
 * Node's socket timeout would not do: it lets its first expiry pass whenever libuv's queue
 * shrank since the write began, so a client that took a little and stopped was closed only
 * after twice the time.
 */
export function dropWhenStalled(res: ServerResponse, ms: number): void {
  const socket = res.socket;
  if (!socket || socket.destroyed) return;
  const clock = new StallClock(socket.bytesWritten - waiting(socket), performance.now(), ms);
  const timer = setInterval(
    () => {
      const left = waiting(socket);
      if (clock.stalled(socket.bytesWritten - left, left, performance.now())) socket.destroy();
    },
    Math.max(10, Math.min(1000, ms / 10)),
  );
  timer.unref();
  res.once('close', () => clearInterval(timer));
}

/**
 * Closes the request's connection once its body has brought no bytes for `ms`, looking every
 * tenth of that (at most every second), until the body has arrived or the response closes: a
 * client that stops sending would otherwise hold what the body holds so far until the
 * server's request timeout (300 s).
 */
export function dropWhenBodyStalls(req: IncomingMessage, res: ServerResponse, ms: number): void {
  const socket = req.socket;
  if (socket.destroyed || req.complete) return;
  // Bytes read from the connection: the body's, once its head has been read.
  const clock = new StallClock(socket.bytesRead, performance.now(), ms);
  const timer = setInterval(
    () => {
      if (req.complete) clearInterval(timer);
      else if (clock.stalled(socket.bytesRead, 1, performance.now())) socket.destroy();
    },
    Math.max(10, Math.min(1000, ms / 10)),
  );
  timer.unref();
  res.once('close', () => clearInterval(timer));
}
