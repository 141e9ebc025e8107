import { LocalCounter } from './local-counter.js';

describe('LocalCounter', () => {
  let now = 1_000_000;
  const counter = new LocalCounter(() => now);

  it('counts hits in a window that starts with the first one, and starts afresh when it ends', () => {
    expect(counter.increment('a', 60_000, 3)).toEqual({ totalHits: 1, windowEndsAt: 1_060_000, blockedUntil: 0 });
    now += 10_000;
    expect(counter.increment('a', 60_000, 3)).toEqual({ totalHits: 2, windowEndsAt: 1_060_000, blockedUntil: 0 });
    expect(counter.increment('b', 60_000, 3).totalHits).toBe(1);
    now = 1_060_000;
    expect(counter.increment('a', 60_000, 3)).toEqual({ totalHits: 1, windowEndsAt: 1_120_000, blockedUntil: 0 });
  });

  it('refuses a key past its limit until its window ends, however late in the window, counting the refused hits too', () => {
    now = 2_000_000;
    expect(counter.increment('c', 60_000, 3).blockedUntil).toBe(0);
    now += 40_000;
    for (let i = 2; i <= 3; i++) expect(counter.increment('c', 60_000, 3).blockedUntil).toBe(0);
    expect(counter.increment('c', 60_000, 3)).toEqual({ totalHits: 4, windowEndsAt: 2_060_000, blockedUntil: 2_060_000 });
    now = 2_059_999;
    expect(counter.increment('c', 60_000, 3)).toEqual({ totalHits: 5, windowEndsAt: 2_060_000, blockedUntil: 2_060_000 });
    now = 2_060_000;
    expect(counter.increment('c', 60_000, 3)).toEqual({ totalHits: 1, windowEndsAt: 2_120_000, blockedUntil: 0 });
  });

  it('forgets windows that have ended, so memory follows the keys of the last minute', () => {
    now = 3_000_000;
    for (let i = 0; i < 1000; i++) counter.increment(`k${i}`, 60_000, 10);
    expect(counter.size).toBeGreaterThanOrEqual(1000);
    now += 120_000;
    counter.increment('fresh', 60_000, 10);
    expect(counter.size).toBe(1);
  });

  it('keeps at most its capacity of keys, whatever a caller makes up', () => {
    // 100 keys of 10 characters, each weighed at 100 bytes and its length.
    const small = new LocalCounter(() => now, 100 * 110);
    for (let i = 0; i < 10_000; i++) small.increment(`made-${String(i).padStart(5, '0')}`, 60_000, 10);
    expect([small.size, small.bytes]).toEqual([100, 100 * 110]);
    // A key over its limit stays blocked while other keys come and go within the capacity.
    for (let i = 0; i < 11; i++) small.increment('partner', 60_000, 10);
    for (let i = 0; i < 50; i++) small.increment(`other-${i}`, 60_000, 10);
    expect(small.increment('partner', 60_000, 10).blockedUntil).toBeGreaterThan(now);
  });

  it('weighs keys by their length, so long made-up keys fill its bytes and not more', () => {
    const counter = new LocalCounter(() => now, 1024 * 1024);
    // 8 KB each, as an address forged in X-Forwarded-For could be.
    for (let i = 0; i < 1000; i++) counter.increment(`ip:${String(i).padStart(8192, 'x')}`, 60_000, 10);
    expect(counter.bytes).toBeLessThanOrEqual(1024 * 1024);
    expect(counter.size).toBe(Math.floor((1024 * 1024) / (100 + 3 + 8192)));
  });

  it('drops ended windows as it counts, before it is full, and never one still open', () => {
    let clock = 5_000_000;
    const counter = new LocalCounter(() => clock);
    // 1000 keys of 5 characters (105 bytes each), then one counted later whose window is still open.
    for (let i = 0; i < 1000; i++) counter.increment(`k${String(i).padStart(4, '0')}`, 30_000, 10);
    clock += 20_000;
    counter.increment('later', 30_000, 10);
    clock += 20_000;
    // The 1000 windows have ended; each count drops two of them.
    for (let i = 0; i < 100; i++) counter.increment(`n${String(i).padStart(4, '0')}`, 30_000, 10);
    expect(counter.bytes).toBe((1000 - 200 + 1 + 100) * 105);
    for (let i = 100; i < 500; i++) counter.increment(`n${String(i).padStart(4, '0')}`, 30_000, 10);
    expect(counter.bytes).toBe((1 + 500) * 105);
    // The open window kept counting.
    expect(counter.increment('later', 30_000, 10).totalHits).toBe(2);
  });

  it('counts at the instant it is given, so a fresh window is exactly its length from there', () => {
    const later = new LocalCounter(() => 9_000_001);
    expect(later.increment('x', 60_000, 3, 9_000_000)).toEqual({ totalHits: 1, windowEndsAt: 9_060_000, blockedUntil: 0 });
  });
});
