import { jest } from '@jest/globals';

/**
 * jest's fake timers for the clocks only, from `now`: the system clock, and with `monotonic`
 * performance.now() too (time then passes by jest.advanceTimersByTime; setSystemTime alone is a
 * step of the system clock). Timers, ticks and the database driver's own run as they do.
 */
export function fakeClocks(now: number, monotonic = false): Parameters<typeof jest.useFakeTimers>[0] {
  return {
    now,
    doNotFake: [
      'hrtime',
      'nextTick',
      ...(monotonic ? [] : (['performance'] as const)),
      'queueMicrotask',
      'requestAnimationFrame',
      'cancelAnimationFrame',
      'requestIdleCallback',
      'cancelIdleCallback',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  };
}

/**
 * Sets this process's system clock `offsetMs` from the real one, standing still there (a host
 * whose clock drifted, a virtual machine resumed, NTP stepping it); `restoreSystemClock` puts it back.
 */
export function setSystemClockOff(offsetMs: number): void {
  jest.useFakeTimers(fakeClocks(Date.now() + offsetMs));
}

export function restoreSystemClock(): void {
  jest.useRealTimers();
}

/** Runs `work` with this process's system clock `offsetMs` from the real one. */
export async function withSystemClockOff<T>(offsetMs: number, work: () => Promise<T>): Promise<T> {
  setSystemClockOff(offsetMs);
  try {
    return await work();
  } finally {
    restoreSystemClock();
  }
}
