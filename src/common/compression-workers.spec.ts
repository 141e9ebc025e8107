import { runInNewContext } from 'node:vm';
import { brotliDecompressSync } from 'node:zlib';
import { CompressionWorkers } from './compression-workers.js';

/** A large page's worth of JSON, its index throughout. */
const body = (i: number): Buffer => Buffer.from(JSON.stringify(Array.from({ length: 30_000 }, (_, n) => ({ body: i, n, text: `visit ${n} of ${i}` }))));

describe('CompressionWorkers', () => {
  let workers: CompressionWorkers;
  beforeEach(() => {
    workers = new CompressionWorkers(2);
  });
  afterEach(() => workers.close());

  it('gives each body back compressed, decoding to exactly its bytes, two at once', async () => {
    const bodies = [body(0), body(1), body(2), body(3)];
    const first = await Promise.all([workers.brotli(bodies[0], 4), workers.brotli(bodies[1], 4)]);
    // The next, smaller than the first in the same worker: its own bytes only, not the rest of the buffer.
    const second = await Promise.all([workers.brotli(bodies[2].subarray(0, 1000), 4), workers.brotli(bodies[3], 4)]);
    const [a, b, c, d] = [...first, ...second];
    expect(brotliDecompressSync(a).equals(bodies[0])).toBe(true);
    expect(brotliDecompressSync(b).equals(bodies[1])).toBe(true);
    expect(brotliDecompressSync(c).equals(bodies[2].subarray(0, 1000))).toBe(true);
    expect(brotliDecompressSync(d).equals(bodies[3])).toBe(true);
    expect(a.length).toBeLessThan(bodies[0].length / 10);
    // A body that is a part of a larger buffer: its own bytes only.
    const within = Buffer.concat([Buffer.from('before'), bodies[1], Buffer.from('after')]).subarray(6, 6 + bodies[1].length);
    expect(brotliDecompressSync(await workers.brotli(within, 4)).equals(bodies[1])).toBe(true);
  });

  it("leaves V8's --expose-gc off once its workers run (their contexts have gc, no context made after)", async () => {
    expect(runInNewContext('typeof gc')).toBe('undefined');
    await Promise.all([workers.brotli(body(0), 4), workers.brotli(body(1), 4)]);
    expect(runInNewContext('typeof gc')).toBe('undefined');
  });

  it('lets go of the buffers of the workers without a job, once each, and compresses with new ones after', async () => {
    expect(workers.letGo()).toBe(0);
    await Promise.all([workers.brotli(body(0), 4), workers.brotli(body(1), 4)]);
    // Each worker's buffer: the next power of two that holds a body, at least 1 MiB.
    const size = Math.max(1024 * 1024, 2 ** Math.ceil(Math.log2(body(0).length)));
    expect(workers.letGo()).toBe(2 * size);
    expect(workers.letGo()).toBe(0);
    // A worker with a job keeps its buffer while it runs.
    const running = workers.brotli(body(2), 4);
    expect(workers.letGo()).toBe(0);
    expect(brotliDecompressSync(await running).equals(body(2))).toBe(true);
    const [again, other] = await Promise.all([workers.brotli(body(3), 4), workers.brotli(body(4).subarray(0, 5000), 4)]);
    expect(brotliDecompressSync(again).equals(body(3))).toBe(true);
    expect(brotliDecompressSync(other).equals(body(4).subarray(0, 5000))).toBe(true);
    // New buffers, each the size of its own job's body: 1 MiB for the small one.
    expect(workers.letGo()).toBe(size + 1024 * 1024);
  });

  it('refuses more jobs at once than it has workers (its callers limit them)', async () => {
    const running = [workers.brotli(body(0), 4), workers.brotli(body(1), 4)];
    expect(() => workers.brotli(body(2), 4)).toThrow('more than 2 compressions at once');
    await Promise.all(running);
  });

  it('fails the job of a worker whose thread ends, and starts another for the next', async () => {
    const running = workers.brotli(body(0), 4);
    // Every worker ended under its job (as one that ran out of memory would).
    await workers.close();
    await expect(running).rejects.toThrow(/the compression worker ended/);
    const again = await workers.brotli(body(1), 4);
    expect(brotliDecompressSync(again).equals(body(1))).toBe(true);
  });
});
