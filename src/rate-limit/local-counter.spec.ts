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
    const small = new LocalCounter(() => now, 100);
    for (let i = 0; i < 10_000; i++) small.increment(`made-up-${i}`, 60_000, 10);
    expect(small.size).toBe(100);
    // A key over its limit stays blocked while other keys come and go within the capacity.
    for (let i = 0; i < 11; i++) small.increment('partner', 60_000, 10);
    for (let i = 0; i < 50; i++) small.increment(`other-${i}`, 60_000, 10);
    expect(small.increment('partner', 60_000, 10).blockedUntil).toBeGreaterThan(now);
  });

  it('counts at the instant it is given, so a fresh window is exactly its length from there', () => {
    const later = new LocalCounter(() => 9_000_001);
    expect(later.increment('x', 60_000, 3, 9_000_000)).toEqual({ totalHits: 1, windowEndsAt: 9_060_000, blockedUntil: 0 });
  });
});
