import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { BodiesInFlight, NoRoomInTime } from './bodies-in-flight.js';

/** A response as the budget sees it: it emits 'close' once written out (or abandoned). */
class FakeResponse extends EventEmitter {
  destroyed = false;
  close(): void {
    this.destroyed = true;
    this.emit('close');
  }
}
const response = (): FakeResponse & Response => new FakeResponse() as FakeResponse & Response;
const settled = (): Promise<void> => new Promise((done) => setImmediate(done));

describe('BodiesInFlight', () => {
  it('holds a request back while the bodies in flight fill the budget, until one is written out', async () => {
    const budget = new BodiesInFlight(100);
    const first = response();
    (await budget.reserve(60)).sending(first, Buffer.alloc(70));
    expect(budget.inFlight).toBe(70);
    let admitted = false;
    const second = budget.reserve(60).then((slot) => {
      admitted = true;
      return slot;
    });
    await settled();
    expect(admitted).toBe(false);
    first.close();
    const slot = await second;
    expect(admitted).toBe(true);
    expect(budget.inFlight).toBe(60);
    slot.cancel();
    expect(budget.inFlight).toBe(0);
  });

  it('counts a body sent on several responses once, until the last of them closes', async () => {
    const budget = new BodiesInFlight(1000);
    const shared = Buffer.alloc(300);
    const responses = [response(), response(), response()];
    for (const res of responses) (await budget.reserve(400)).sending(res, shared);
    expect(budget.inFlight).toBe(300);
    responses[0].close();
    responses[1].close();
    expect(budget.inFlight).toBe(300);
    responses[2].close();
    expect(budget.inFlight).toBe(0);
  });

  it('lets a page larger than the whole budget go when nothing else is in flight', async () => {
    const budget = new BodiesInFlight(100);
    const res = response();
    (await budget.reserve(500)).sending(res, Buffer.alloc(500));
    expect(budget.inFlight).toBe(500);
    res.close();
    expect(budget.inFlight).toBe(0);
  });

  it('gives back the estimate of a failed read, and never counts a body for a response already gone', async () => {
    const budget = new BodiesInFlight(100);
    const failed = await budget.reserve(80);
    const waiting = budget.reserve(80);
    failed.cancel();
    failed.cancel();
    const slot = await waiting;
    expect(budget.inFlight).toBe(80);
    const gone = response();
    gone.close();
    slot.sending(gone, Buffer.alloc(90));
    expect(budget.inFlight).toBe(0);
  });

  it('counts a large body by the whole buffer it lies at the start of, and tells the bodies carried apart from estimates', async () => {
    const budget = new BodiesInFlight(10_000_000);
    const slot = await budget.reserve(100_000);
    expect(budget.inFlight).toBe(100_000);
    expect(budget.carried).toBe(0);
    const res = response();
    slot.sending(res, Buffer.allocUnsafeSlow(200_000).subarray(0, 150_000));
    expect(budget.inFlight).toBe(200_000);
    expect(budget.carried).toBe(200_000);
    const small = response();
    (await budget.reserve(10)).sending(small, Buffer.allocUnsafeSlow(8192).subarray(0, 100));
    expect(budget.carried).toBe(200_100);
    res.close();
    small.close();
    expect(budget.inFlight).toBe(0);
    expect(budget.carried).toBe(0);
  });

  it('keeps one owner to half of the budget, so that others still find room while its responses are not read', async () => {
    const budget = new BodiesInFlight(100);
    const stalled = [response(), response()];
    (await budget.reserve(30, { owner: 'a' })).sending(stalled[0], Buffer.alloc(30));
    (await budget.reserve(20, { owner: 'a' })).sending(stalled[1], Buffer.alloc(20));
    expect(budget.heldBy('a')).toBe(50);
    let third = false;
    const more = budget.reserve(10, { owner: 'a' }).then((slot) => {
      third = true;
      return slot;
    });
    // Another owner is let in at once, up to the budget.
    const other = await budget.reserve(45, { owner: 'b' });
    await settled();
    expect(third).toBe(false);
    expect([budget.inFlight, budget.heldBy('b')]).toEqual([95, 45]);
    other.cancel();
    stalled[0].close();
    const slot = await more;
    expect(third).toBe(true);
    expect(budget.heldBy('a')).toBe(30);
    slot.cancel();
    stalled[1].close();
    expect([budget.inFlight, budget.heldBy('a'), budget.heldBy('b')]).toEqual([0, 0, 0]);
  });

  it("lets an owner's first page go whatever its size, and counts a body it sends on several responses once", async () => {
    const budget = new BodiesInFlight(100);
    const shared = Buffer.alloc(40);
    const [one, two] = [response(), response()];
    (await budget.reserve(70, { owner: 'a' })).sending(one, shared);
    expect(budget.heldBy('a')).toBe(40);
    const second = await Promise.race([budget.reserve(10, { owner: 'a' }), new Promise<null>((done) => setTimeout(() => done(null), 20))]);
    expect(second).not.toBeNull();
    second!.sending(two, shared);
    expect([budget.inFlight, budget.heldBy('a')]).toEqual([40, 40]);
    one.close();
    expect([budget.inFlight, budget.heldBy('a')]).toEqual([40, 40]);
    two.close();
    expect([budget.inFlight, budget.heldBy('a')]).toEqual([0, 0]);
  });

  it('gives up a wait that outlasts its bound, and leaves the budget as it was', async () => {
    const budget = new BodiesInFlight(100);
    const res = response();
    (await budget.reserve(90)).sending(res, Buffer.alloc(90));
    const started = Date.now();
    await expect(budget.reserve(20, { owner: 'b', waitMs: 50 })).rejects.toBeInstanceOf(NoRoomInTime);
    expect(Date.now() - started).toBeGreaterThanOrEqual(45);
    expect([budget.inFlight, budget.heldBy('b')]).toEqual([90, 0]);
    // A wait that room ends in time is admitted.
    const waiting = budget.reserve(20, { owner: 'b', waitMs: 10_000 });
    res.close();
    (await waiting).cancel();
    expect(budget.inFlight).toBe(0);
  });
});
