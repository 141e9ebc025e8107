import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/**
 * Whether a connection has stopped moving bytes: fed what it has moved so far and what still
 * waits, it says so once fewer than `atLeast` bytes (by default one) moved in `ms` while bytes
 * waited. That many bytes moved, or none waiting, start the time afresh. `atLeast` is given
 * what had moved when the time last started.
 */
export class StallClock {
  private since: number;

  constructor(
    private taken: number,
    now: number,
    private readonly ms: number,
    private readonly atLeast: (taken: number) => number = () => 1,
  ) {
    this.since = now;
  }

  stalled(taken: number, waiting: number, now: number): boolean {
    if (taken - this.taken >= this.atLeast(this.taken) || waiting === 0) {
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
 * Closes the request's connection once its body has brought no bytes for `ms`, or fewer than
 * `minBytesPerSecond` a second over `ms` (or than the rest of the `expected` bytes, when
 * those are fewer), looking every tenth of that (at most every second), until the body has
 * arrived or the response closes: a client that stops sending, or sends a byte now and then,
 * would otherwise hold what the body reserved until the server's request timeout (300 s).
 */
export function dropWhenBodyStalls(req: IncomingMessage, res: ServerResponse, ms: number, { minBytesPerSecond = 0, expected = Infinity } = {}): void {
  const socket = req.socket;
  if (socket.destroyed || req.complete) return;
  // Bytes read from the connection: the body's, once its head has been read.
  const start = socket.bytesRead;
  const perWindow = Math.ceil((minBytesPerSecond * ms) / 1000);
  const atLeast = (taken: number): number => Math.max(1, Math.min(perWindow, expected - (taken - start)));
  const clock = new StallClock(start, performance.now(), ms, atLeast);
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
