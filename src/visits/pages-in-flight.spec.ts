import { EventEmitter } from 'node:events';
import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { ProblemException } from '../common/problem.js';
import { loadConfig } from '../config/app-config.js';
import { PagesInFlight } from './pages-in-flight.js';
import { StallClock } from '../common/stalled-connections.js';

/** A response that closes when the test says so. */
function response(): ServerResponse & { close(): void } {
  const res = Object.assign(new EventEmitter(), { closed: false, destroyed: false, setTimeout: () => res }) as unknown as ServerResponse & {
    close(): void;
  };
  res.close = () => {
    Object.assign(res, { closed: true });
    res.emit('close');
  };
  return res;
}

describe('PagesInFlight', () => {
  it('never learns a figure per visit below the first from pages short of their Take', async () => {
    // 8 MB: one credential holds at most 4 MB, one Take=1000 page's reservation at 4 KB a visit.
    const inFlight = new PagesInFlight(loadConfig({ PAGES_IN_FLIGHT_MB: '8', PAGES_WAIT_SECONDS: '1' }));
    const serveEmpty = (res: ServerResponse) =>
      inFlight.serve(res, 1000, 'c1', () => Promise.resolve({ body: Buffer.from('{"data":{"visits":[]}}'), release: () => undefined }), (page, sending) => {
        sending(page.body);
        return Promise.resolve();
      });
    for (let i = 0; i < 60; i++) {
      const res = response();
      await serveEmpty(res);
      res.close();
    }
    // A page being read holds its reservation: a second one of the same credential must wait.
    let finishRead!: () => void;
    const holding = inFlight.serve(
      response(),
      1000,
      'c1',
      () => new Promise<{ body: Buffer; release: () => void }>((resolve) => (finishRead = () => resolve({ body: Buffer.alloc(10), release: () => undefined }))),
      () => Promise.resolve(),
    );
    await new Promise((resolve) => setImmediate(resolve));
    await expect(serveEmpty(response())).rejects.toBeInstanceOf(ProblemException);
    finishRead();
    await holding;
  });

  it("releases the page's hold on its body only once the write has settled and the response has closed", async () => {
    const inFlight = new PagesInFlight(loadConfig({}));
    const res = response();
    let releases = 0;
    let finishWrite!: () => void;
    const serving = inFlight.serve(
      res,
      10,
      'c1',
      () => Promise.resolve({ body: Buffer.alloc(1000), release: () => releases++ }),
      (page, sending) =>
        new Promise<void>((resolve) => {
          sending(page.body);
          finishWrite = resolve;
        }),
    );
    await new Promise((resolve) => setImmediate(resolve));
    expect(releases).toBe(0);
    finishWrite();
    await serving;
    expect(releases).toBe(0);
    res.close();
    expect(releases).toBe(1);
  });

  it('gives as room what the budget has left beside the bodies being written, estimates of pages being read aside', async () => {
    const inFlight = new PagesInFlight(loadConfig({ PAGES_IN_FLIGHT_MB: '1' }));
    expect(inFlight.room).toBe(1024 * 1024);
    const res = response();
    let roomWhileRead = 0;
    await inFlight.serve(
      res,
      10,
      'c1',
      () => {
        roomWhileRead = inFlight.room;
        return Promise.resolve({ body: Buffer.alloc(300_000), release: () => undefined });
      },
      (page, sending) => {
        sending(page.body);
        return Promise.resolve();
      },
    );
    expect(roomWhileRead).toBe(1024 * 1024);
    expect(inFlight.room).toBe(1024 * 1024 - 300_000);
    res.close();
    expect(inFlight.room).toBe(1024 * 1024);
    expect(new PagesInFlight(loadConfig({ PAGES_IN_FLIGHT_MB: '0' })).room).toBe(Infinity);
  });

  it('releases at once when the response closed before the write settled, and when the write failed', async () => {
    const inFlight = new PagesInFlight(loadConfig({}));
    const closed = response();
    let releases = 0;
    await inFlight.serve(
      closed,
      10,
      'c1',
      () => Promise.resolve({ body: Buffer.alloc(10), release: () => releases++ }),
      () => {
        closed.close();
        return Promise.resolve();
      },
    );
    expect(releases).toBe(1);
    const failing = response();
    const serving = inFlight.serve(
      failing,
      10,
      'c1',
      () => Promise.resolve({ body: Buffer.alloc(10), release: () => releases++ }),
      () => Promise.reject(new Error('compression failed')),
    );
    await expect(serving).rejects.toThrow('compression failed');
    expect(releases).toBe(1);
    failing.close();
    expect(releases).toBe(2);
  });

  describe('over HTTP, with a client that stops reading', () => {
    /** Larger than what the kernel's socket buffers on both ends of a loopback connection take in. */
    const PAGE = 24 * 1024 * 1024;
    const BUDGET = 40 * 1024 * 1024;
    const body = Buffer.alloc(PAGE, 0x61);

    interface PageServer {
      port: number;
      inFlight: PagesInFlight;
      /** The statuses of the problems the pages were refused with. */
      answers: (number | string)[];
      close: () => Promise<void>;
    }

    /** A server writing a 24 MiB page per request through the budget, for the credential named in X-Owner. */
    async function pageServer(stallSeconds: number): Promise<PageServer> {
      const inFlight = new PagesInFlight(loadConfig({ PAGES_IN_FLIGHT_MB: '40', PAGES_WAIT_SECONDS: '1', PAGES_STALL_SECONDS: String(stallSeconds) }));
      const answers: (number | string)[] = [];
      const server: Server = createServer((req, res) => {
        inFlight
          .serve(res, 1000, String(req.headers['x-owner']), () => Promise.resolve({ body, release: () => undefined }), (page, sending) => {
            sending(page.body);
            res.writeHead(200, { 'Content-Length': page.body.length });
            res.end(page.body);
            return Promise.resolve();
          })
          .catch((error: unknown) => {
            answers.push(error instanceof ProblemException ? error.getStatus() : String(error));
            res.writeHead(error instanceof ProblemException ? error.getStatus() : 500, { ...(error instanceof ProblemException ? error.headers : {}), 'Content-Length': 0 });
            res.end();
          });
      });
      await new Promise<void>((listening) => server.listen(0, '127.0.0.1', listening));
      const { port } = server.address() as AddressInfo;
      return { port, inFlight, answers, close: () => new Promise<void>((closed) => server.close(() => closed())) };
    }

    /** Sends a page request and never reads the answer. */
    function stalled(port: number, owner: string): Promise<Socket> {
      return new Promise((connected) => {
        const socket = connect(port, '127.0.0.1', () => {
          socket.pause();
          socket.write(`GET /page HTTP/1.1\r\nHost: x\r\nX-Owner: ${owner}\r\n\r\n`);
          connected(socket);
        });
        socket.on('error', () => undefined);
      });
    }

    /** Sends a page request and reads the answer whole: its status and body length. */
    function read(port: number, owner: string): Promise<{ status: number; bytes: number; retryAfter?: string }> {
      return new Promise((answered, failed) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(`GET /page HTTP/1.1\r\nHost: x\r\nX-Owner: ${owner}\r\nConnection: close\r\n\r\n`));
        const chunks: Buffer[] = [];
        socket.on('data', (chunk) => chunks.push(chunk));
        socket.on('error', failed);
        socket.on('end', () => {
          const all = Buffer.concat(chunks);
          const head = all.subarray(0, all.indexOf('\r\n\r\n')).toString('latin1');
          answered({
            status: Number(head.split(' ')[1]),
            bytes: all.length - head.length - 4,
            retryAfter: /^retry-after: (.*)$/im.exec(head)?.[1],
          });
        });
      });
    }

    /** Waits until `done` holds, looking every 20 ms, for at most 20 s (a loaded machine may be slow). */
    async function until(done: () => boolean): Promise<void> {
      const started = Date.now();
      while (!done() && Date.now() - started < 20_000) await new Promise((resolve) => setTimeout(resolve, 20));
    }

    it("lets another credential's page through while one's stalled page holds more than its half, and refuses that one's next page in time", async () => {
      // No stall bound within the test: the stalled page holds its room until its client goes.
      const { port, inFlight, answers, close } = await pageServer(3600);
      try {
        // A stalled 24 MiB page of credential a: a first page goes whatever its size, and this
        // one holds more than a's half of the budget (20 MiB).
        const first = await stalled(port, 'a');
        await until(() => inFlight.room < BUDGET);
        expect(inFlight.room).toBe(BUDGET - PAGE);

        // Credential b is not held back by a's stalled page.
        expect(await read(port, 'b')).toEqual({ status: 200, bytes: PAGE, retryAfter: undefined });
        // a's next page finds no room in a's half within the wait: a 503 to retry.
        const started = Date.now();
        expect(await read(port, 'a')).toEqual({ status: 503, bytes: 0, retryAfter: '5' });
        expect(Date.now() - started).toBeGreaterThanOrEqual(900);
        expect(answers).toEqual([503]);

        // Once the stalled client goes, its room comes back, and a is served again.
        first.destroy();
        await until(() => inFlight.room === BUDGET);
        expect(inFlight.room).toBe(BUDGET);
        expect(await read(port, 'a')).toEqual({ status: 200, bytes: PAGE, retryAfter: undefined });
      } finally {
        await close();
      }
    }, 60_000);

    it('drops a page whose connection takes no bytes for PAGES_STALL_SECONDS, giving its room back', async () => {
      const { port, inFlight, close } = await pageServer(1);
      try {
        const first = await stalled(port, 'a');
        await until(() => inFlight.room < BUDGET);
        expect(inFlight.room).toBe(BUDGET - PAGE);
        // Closed once it has taken nothing for a second (the client, reading nothing, does not
        // see it), and its body leaves the budget.
        await until(() => inFlight.room === BUDGET);
        expect(inFlight.room).toBe(BUDGET);
        first.resume();
        await new Promise((resolve) => first.once('close', resolve));
      } finally {
        await close();
      }
    }, 60_000);

    it('drops a page whose connection took bytes and then stopped once PAGES_STALL_SECONDS have passed, not twice that', async () => {
      const { port, inFlight, close } = await pageServer(2);
      try {
        let got = 0;
        let last = 0;
        const client = connect(port, '127.0.0.1', () => client.write('GET /page HTTP/1.1\r\nHost: x\r\nX-Owner: a\r\n\r\n'));
        client.on('error', () => undefined);
        client.on('data', (chunk: Buffer) => {
          got += chunk.length;
          last = Date.now();
          if (got >= 1024 * 1024) client.pause();
        });
        await until(() => got >= 1024 * 1024 && inFlight.room < BUDGET);
        await until(() => inFlight.room === BUDGET);
        const dropped = Date.now();
        expect(inFlight.room).toBe(BUDGET);
        // The connection took bytes until its buffers filled, a little after the client's last
        // read: the drop comes 2 s after that, and well before 4 s (Node's socket timeout let its
        // first expiry pass once libuv's queue had shrunk, and closed it after twice the time).
        // The client's last read is seen late on a busy machine (its 'data' event waits its
        // turn after the server's last write): 1988 ms was seen, so the lower bound has room.
        expect(dropped - last).toBeGreaterThanOrEqual(1500);
        expect(dropped - last).toBeLessThan(3500);
        client.destroy();
      } finally {
        await close();
      }
    }, 60_000);
  });
});

describe('StallClock', () => {
  it('says a connection stalled once it has taken nothing for the time while bytes waited', () => {
    const clock = new StallClock(0, 0, 1000);
    expect(clock.stalled(100, 50, 500)).toBe(false);
    // Nothing taken since 500.
    expect(clock.stalled(100, 50, 1499)).toBe(false);
    expect(clock.stalled(100, 50, 1500)).toBe(true);
  });

  it('starts the time afresh when bytes are taken, or none wait', () => {
    const clock = new StallClock(0, 0, 1000);
    expect(clock.stalled(0, 50, 900)).toBe(false);
    expect(clock.stalled(10, 40, 1900)).toBe(false);
    expect(clock.stalled(10, 40, 2800)).toBe(false);
    // All taken: a connection with nothing to take is not stalled, however long.
    expect(clock.stalled(10, 0, 2900)).toBe(false);
    expect(clock.stalled(10, 0, 9000)).toBe(false);
    // More written, and not taken from then on.
    expect(clock.stalled(10, 70, 9000)).toBe(false);
    expect(clock.stalled(10, 70, 9999)).toBe(false);
    expect(clock.stalled(10, 70, 10_000)).toBe(true);
  });

  it('counts a connection that moves fewer than atLeast bytes in the time as stalled, a trickle too', () => {
    // At least 100 bytes a second, or the rest of 250 expected (and always one, as dropWhenBodyStalls asks).
    const clock = new StallClock(0, 0, 1000, (taken) => Math.max(1, Math.min(100, 250 - taken)));
    expect(clock.stalled(60, 1, 500)).toBe(false);
    expect(clock.stalled(99, 1, 999)).toBe(false);
    // 99 bytes in a second: stalled, however many came.
    expect(clock.stalled(99, 1, 1000)).toBe(true);
    const moving = new StallClock(0, 0, 1000, (taken) => Math.max(1, Math.min(100, 250 - taken)));
    expect(moving.stalled(100, 1, 900)).toBe(false);
    expect(moving.stalled(200, 1, 1800)).toBe(false);
    // 50 bytes were left: 50 in the next second is enough.
    expect(moving.stalled(249, 1, 2700)).toBe(false);
    expect(moving.stalled(250, 1, 2790)).toBe(false);
    expect(moving.stalled(250, 1, 3789)).toBe(false);
    expect(moving.stalled(250, 1, 3790)).toBe(true);
  });
});
