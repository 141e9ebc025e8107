import { jest } from '@jest/globals';

/** Only the system clock is faked: timers, the monotonic clock and the database driver run as they do. */
const systemClockOnly: Parameters<typeof jest.useFakeTimers>[0] = {
  doNotFake: [
    'hrtime',
    'nextTick',
    'performance',
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

/**
 * Sets this process's system clock `offsetMs` from the real one, standing still there (a host
 * whose clock drifted, a virtual machine resumed, NTP stepping it); `restoreSystemClock` puts it back.
 */
export function setSystemClockOff(offsetMs: number): void {
  jest.useFakeTimers({ ...systemClockOnly, now: Date.now() + offsetMs });
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
