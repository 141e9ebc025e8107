import { jest } from '@jest/globals';
import { LocalTokenFailures } from './local-token-failures.js';

describe('LocalTokenFailures', () => {
  const T0 = 1_000_000;
  let clock = T0;
  const store = (capacity = 1000) => new LocalTokenFailures({ limit: 3, windowMs: 60_000, capacity, now: () => clock });
  // Every failure another wrong secret, unless a test says otherwise.
  let guesses = 0;
  const fail = (s: LocalTokenFailures, id: string) => s.recordFailure(id, `guess-${guesses++}`);
  const failAll = (s: LocalTokenFailures, ids: Iterable<string>) => {
    for (const id of ids) fail(s, id);
  };
  const others = function* (count: number, tag = 'other'): Generator<string> {
    for (let i = 0; i < count; i++) yield `svc_${tag}_${i}`;
  };

  beforeEach(() => {
    clock = T0;
  });

  it('blocks a client id after the allowed failures until the window ends', () => {
    const failures = store();
    failAll(failures, ['svc_a', 'svc_a']);
    expect(failures.blockedFor('svc_a')).toBe(0);
    fail(failures, 'svc_a');
    clock = T0 + 1000;
    expect(failures.blockedFor('svc_a')).toBe(59);
    expect(failures.blockedFor('svc_b')).toBe(0);
    clock = T0 + 60_000;
    expect(failures.blockedFor('svc_a')).toBe(0);
  });

  it('ends a lockout when its window has passed, even when the system clock stepped back meanwhile (NTP, a resumed machine)', () => {
    // The system clock and the monotonic one faked: time passes by advanceTimersByTime, setSystemTime steps the system clock alone.
    jest.useFakeTimers({ doNotFake: ['setTimeout'] });
    try {
      const failures = new LocalTokenFailures({ limit: 3, windowMs: 60_000, capacity: 1000 });
      failAll(failures, ['svc_a', 'svc_a', 'svc_a']);
      expect(failures.blockedFor('svc_a')).toBe(60);
      jest.setSystemTime(Date.now() - 3_600_000);
      jest.advanceTimersByTime(59_000);
      expect(failures.blockedFor('svc_a')).toBe(1);
      jest.advanceTimersByTime(1_000);
      // Before, the lockout held for the hour the clock went back, and the minute after it.
      expect(failures.blockedFor('svc_a')).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });

  it('counts a wrong secret once in its window, however often it is sent', () => {
    const failures = store();
    for (let i = 0; i < 10; i++) failures.recordFailure('svc_a', 'same');
    failures.recordFailure('svc_a', 'other');
    expect(failures.blockedFor('svc_a')).toBe(0);
    // Another client id's guesses are its own.
    failures.recordFailure('svc_b', 'same');
    failures.recordFailure('svc_a', 'third');
    expect(failures.blockedFor('svc_a')).toBe(60);
    expect(failures.blockedFor('svc_b')).toBe(0);
  });

  it('forgets the guesses with the window: the same wrong secret counts again in the next one', () => {
    const failures = store();
    failures.recordFailure('svc_a', 'same');
    failures.recordFailure('svc_a', 'same');
    clock = T0 + 61_000;
    failures.recordFailure('svc_a', 'same');
    failures.recordFailure('svc_a', 'other');
    failures.recordFailure('svc_a', 'same');
    expect(failures.blockedFor('svc_a')).toBe(0);
    failures.recordFailure('svc_a', 'third');
    expect(failures.blockedFor('svc_a')).toBe(60);
  });

  it('starts a new window after the old one ends', () => {
    const failures = store();
    failAll(failures, ['svc_a', 'svc_a']);
    clock = T0 + 61_000;
    fail(failures, 'svc_a');
    expect(failures.blockedFor('svc_a')).toBe(0);
    failAll(failures, ['svc_a', 'svc_a']);
    expect(failures.blockedFor('svc_a')).toBe(60);
  });

  it('keeps a lockout while fifty times its capacity of other client ids fail', () => {
    const failures = store(1000);
    failAll(failures, ['svc_a', 'svc_a', 'svc_a']);
    clock = T0 + 5000;
    failAll(failures, others(50_000));
    expect(failures.blockedFor('svc_a')).toBe(55);
    expect(failures.size).toEqual({ counting: 1000, lockouts: 1 });
  });

  it('keeps a lockout while the production capacity and more of other client ids fail', () => {
    const failures = store(100_000);
    failAll(failures, ['svc_a', 'svc_a', 'svc_a']);
    failAll(failures, others(150_000));
    expect(failures.blockedFor('svc_a')).toBe(60);
  });

  it('makes room one entry at a time, forgetting the least recently failing client id only', () => {
    const failures = store(3);
    failAll(failures, ['svc_old', 'svc_mid', 'svc_new', 'svc_old']);
    // Full: svc_mid failed least recently, so it alone makes room for svc_x.
    fail(failures, 'svc_x');
    fail(failures, 'svc_old');
    expect(failures.blockedFor('svc_old')).toBe(60);
    failAll(failures, ['svc_new', 'svc_new']);
    expect(failures.blockedFor('svc_new')).toBe(60);
    // svc_mid starts again from its next failure: two more do not lock it out.
    failAll(failures, ['svc_mid', 'svc_mid']);
    expect(failures.blockedFor('svc_mid')).toBe(0);
  });

  it('ends a lockout with its window, dropping the entry, and never holds more than its capacity', () => {
    const failures = store(100);
    failAll(failures, others(300));
    failAll(failures, [...others(3, 'locked'), ...others(3, 'locked'), ...others(3, 'locked')]);
    expect(failures.size.counting).toBeLessThanOrEqual(100);
    expect(failures.size.lockouts).toBe(3);
    clock = T0 + 60_001;
    for (const id of others(3, 'locked')) expect(failures.blockedFor(id)).toBe(0);
    expect(failures.size.lockouts).toBe(0);
    failAll(failures, others(300, 'later'));
    expect(failures.size).toEqual({ counting: 100, lockouts: 0 });
  });
});
