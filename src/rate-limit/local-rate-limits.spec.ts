import { LocalRateLimits } from './local-rate-limits.js';

describe('LocalRateLimits', () => {
  const T0 = 1_000_000;
  let clock = T0;
  const limits = () => new LocalRateLimits(() => clock);

  beforeEach(() => {
    clock = T0;
  });

  it('counts hits in a fixed window that the first hit starts', () => {
    const l = limits();
    expect(l.count('k', 60_000, 3, 60_000)).toEqual([1, 60_000, 0, 0]);
    clock = T0 + 59_000;
    expect(l.count('k', 60_000, 3, 60_000)).toEqual([2, 1000, 0, 0]);
    expect(l.count('other', 60_000, 3, 60_000)).toEqual([1, 60_000, 0, 0]);
    // The window ends a minute after its first hit, not after its last: a fresh count.
    clock = T0 + 60_000;
    expect(l.count('k', 60_000, 3, 60_000)).toEqual([1, 60_000, 0, 0]);
  });

  it('blocks a key past the limit for the block duration, counting no hit while blocked', () => {
    const l = limits();
    for (let i = 1; i <= 3; i++) expect(l.count('k', 60_000, 3, 30_000)).toEqual([i, 60_000, 0, 0]);
    expect(l.count('k', 60_000, 3, 30_000)).toEqual([4, 60_000, 1, 30_000]);
    clock = T0 + 10_000;
    expect(l.count('k', 60_000, 3, 30_000)).toEqual([4, 50_000, 1, 20_000]);
    // Unblocked inside the same window, the next hit is past the limit again.
    clock = T0 + 30_000;
    expect(l.count('k', 60_000, 3, 30_000)).toEqual([5, 30_000, 1, 30_000]);
  });

  it('reads a window that ended during its block as the limit, and counts afresh after the block', () => {
    const l = limits();
    for (let i = 0; i < 3; i++) l.count('k', 60_000, 2, 120_000);
    clock = T0 + 61_000;
    expect(l.count('k', 60_000, 2, 120_000)).toEqual([2, -1000, 1, 59_000]);
    clock = T0 + 120_000;
    expect(l.count('k', 60_000, 2, 120_000)).toEqual([1, 60_000, 0, 0]);
  });

  it('drops ended windows and blocks at most once a minute, keeping those still running', () => {
    const l = limits();
    for (let i = 0; i < 1000; i++) l.count(`k${i}`, 60_000, 5, 60_000);
    for (let i = 0; i < 6; i++) l.count('blocked', 60_000, 5, 120_000);
    clock = T0 + 30_000;
    l.count('late', 60_000, 5, 60_000);
    expect(l.size).toBe(1002);
    clock = T0 + 60_000;
    l.count('now', 60_000, 5, 60_000);
    expect(l.size).toBe(3);
    expect(l.count('blocked', 60_000, 5, 120_000)).toEqual([5, 0, 1, 60_000]);
    expect(l.count('late', 60_000, 5, 60_000)).toEqual([2, 30_000, 0, 0]);
  });
});
