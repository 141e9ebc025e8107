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

  it('returns buffers that were live at the last collection once they die, though the figure never rises above it', () => {
    const p = probe();
    const collector = new IdleCollector(p, 16 * MB);
    // Uploads in flight (440 MB) and some dead pages while the process is quiet: collected, the uploads live on.
    p.live += 440 * MB;
    p.garbage = 20 * MB;
    expect(collector.check()).toBe(true);
    expect([p.collections, p.bufferBytes()]).toEqual([1, 450 * MB]);
    // The uploads are aborted: their buffers die, the figure stays where the collection left it.
    p.live -= 440 * MB;
    p.garbage = 440 * MB;
    let checks = 0;
    while (p.collections === 1 && checks < 100) {
      collector.check();
      checks++;
    }
    expect({ collections: p.collections, checks, bytes: p.bufferBytes() }).toEqual({ collections: 2, checks: 2, bytes: 10 * MB });
    // Back at the floor: nothing more to look for.
    for (let i = 0; i < 50; i++) expect(collector.check()).toBe(false);
  });

  it('looks again at memory that stays held less and less often, at most every 12 quiet checks, and never while busy', () => {
    const p = probe();
    const collector = new IdleCollector(p, 16 * MB);
    // A cache of 30 MB that stays, filled with 20 MB of dead pages.
    p.live += 30 * MB;
    p.garbage = 20 * MB;
    expect(collector.check()).toBe(true);
    const at: number[] = [];
    for (let i = 1; i <= 60; i++) if (collector.check()) at.push(i);
    expect(at).toEqual([2, 6, 14, 26, 38, 50]);
    // Busy checks do not count: 10 of the 12 quiet ones had passed, 2 are left.
    p.busy = 0.5;
    for (let i = 0; i < 50; i++) expect(collector.check()).toBe(false);
    p.busy = 0;
    const later: number[] = [];
    for (let i = 1; i <= 12; i++) if (collector.check()) later.push(i);
    expect(later).toEqual([2]);
    // The cache is dropped: the next of those collections, 2 checks on, frees it, and back at the floor none follows.
    p.live -= 30 * MB;
    p.garbage = 30 * MB;
    const after: number[] = [];
    for (let i = 1; i <= 12; i++) if (collector.check()) after.push(i);
    expect({ after, bytes: p.bufferBytes() }).toEqual({ after: [2], bytes: 10 * MB });
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
