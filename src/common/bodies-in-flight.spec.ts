import { EventEmitter } from 'node:events';
import type { Response } from 'express';
import { BodiesInFlight } from './bodies-in-flight.js';

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
});
