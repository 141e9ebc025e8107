import { EventEmitter } from 'node:events';
import type { ServerResponse } from 'node:http';
import { loadConfig } from '../config/app-config.js';
import { PagesInFlight } from './pages-in-flight.js';

/** A response that closes when the test says so. */
function response(): ServerResponse & { close(): void } {
  const res = Object.assign(new EventEmitter(), { closed: false, destroyed: false }) as unknown as ServerResponse & { close(): void };
  res.close = () => {
    Object.assign(res, { closed: true });
    res.emit('close');
  };
  return res;
}

describe('PagesInFlight', () => {
  it("releases the page's hold on its body only once the write has settled and the response has closed", async () => {
    const inFlight = new PagesInFlight(loadConfig({}));
    const res = response();
    let releases = 0;
    let finishWrite!: () => void;
    const serving = inFlight.serve(
      res,
      10,
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
      () => Promise.resolve({ body: Buffer.alloc(10), release: () => releases++ }),
      () => Promise.reject(new Error('compression failed')),
    );
    await expect(serving).rejects.toThrow('compression failed');
    expect(releases).toBe(1);
    failing.close();
    expect(releases).toBe(2);
  });
});
