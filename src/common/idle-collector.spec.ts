import { fullCollection, IdleCollector, type IdleCollectorProbe } from './idle-collector.js';

describe('IdleCollector', () => {
  const MB = 1024 * 1024;

  /** A probe whose readings the test sets; a collection frees what `garbage` holds. */
  function probe(): IdleCollectorProbe & { live: number; garbage: number; busy: number; collections: number } {
    return {
      live: 10 * MB,
      garbage: 0,
      busy: 0,
      collections: 0,
      bufferBytes() {
        return this.live + this.garbage;
      },
      busyShare() {
        return this.busy;
      },
      collect() {
        this.collections++;
        this.garbage = 0;
      },
    };
  }

  it('lets go of what is kept for re-use only when quiet, and counts it towards a collection', () => {
    const p = probe();
    let kept = 20 * MB;
    let calls = 0;
    p.letGo = () => {
      calls++;
      const bytes = kept;
      kept = 0;
      return bytes;
    };
    const collector = new IdleCollector(p, 16 * MB);
    p.busy = 0.5;
    expect(collector.check()).toBe(false);
    expect([calls, kept]).toEqual([0, 20 * MB]);
    // Quiet: the 20 MB let go are garbage still counted in the buffer bytes, and worth a collection.
    p.busy = 0;
    expect(collector.check()).toBe(true);
    expect([calls, kept, p.collections]).toEqual([1, 0, 1]);
    // Nothing more let go nor grown: no collection.
    expect(collector.check()).toBe(false);
    expect([calls, p.collections]).toEqual([2, 1]);
  });

  it('collects once the process is quiet with buffers grown past the threshold, and not again until they grow again', () => {
    const p = probe();
    const collector = new IdleCollector(p, 16 * MB);
    p.garbage = 40 * MB;
    // Busy: never, however much there is.
    p.busy = 0.6;
    expect(collector.check()).toBe(false);
    p.busy = 0.05;
    expect(collector.check()).toBe(false);
    expect(p.collections).toBe(0);
    // Quiet.
    p.busy = 0.01;
    expect(collector.check()).toBe(true);
    expect(p.collections).toBe(1);
    expect(p.garbage).toBe(0);
    expect(collector.check()).toBe(false);
    // Less than the threshold since: nothing.
    p.garbage = 15 * MB;
    expect(collector.check()).toBe(false);
    p.garbage = 17 * MB;
    expect(collector.check()).toBe(true);
    expect(p.collections).toBe(2);
  });

  it('counts growth from what is held after the last collection: live buffers (a cache) do not make it collect again', () => {
    const p = probe();
    const collector = new IdleCollector(p, 16 * MB);
    // A cache filled with 30 MB of live pages, and 20 MB of dead ones.
    p.live += 30 * MB;
    p.garbage = 20 * MB;
    expect(collector.check()).toBe(true);
    expect(p.collections).toBe(1);
    // Quiet again, the cache still held: no collection.
    expect(collector.check()).toBe(false);
    // Buffers freed by V8 meanwhile lower the baseline: growth counts from there.
    p.live -= 20 * MB;
    expect(collector.check()).toBe(false);
    p.garbage = 17 * MB;
    expect(collector.check()).toBe(true);
    expect(p.collections).toBe(2);
  });

  it("uses V8's full collection, which frees buffers no longer reachable", async () => {
    const collect = fullCollection();
    // A buffer no longer reachable once this returns, watched by a weak reference to its memory:
    // the process's own buffer figure would move with whatever else a collection frees meanwhile.
    const watched = ((): WeakRef<ArrayBuffer> => {
      const buffer = Buffer.alloc(8 * MB, 1);
      expect({ own: buffer.buffer.byteLength, last: buffer[8 * MB - 1] }).toEqual({ own: 8 * MB, last: 1 });
      return new WeakRef(buffer.buffer);
    })();
    // A buffer this large lives outside the young generation: only a full collection frees it,
    // and a weak reference lets go of it once the job that made it has ended.
    for (let i = 0; i < 10 && watched.deref() !== undefined; i++) {
      await new Promise((resolve) => setImmediate(resolve));
      collect();
    }
    expect(watched.deref()).toBeUndefined();
  });
});
