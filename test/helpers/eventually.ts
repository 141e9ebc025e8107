/**
 * Calls `attempt` until `accept` takes its result, pausing between tries, for at most
 * `timeoutMs`; resolves with the last result either way, for the test to assert on. For
 * conditions that become true after a while (a reconnect), whatever the machine's speed.
 */
export async function eventually<T>(attempt: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 60_000, pauseMs = 250): Promise<T> {
  // On the monotonic clock: a test that sets the system clock off (setSystemClockOff) stands it still.
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await attempt();
    if (accept(value) || performance.now() >= deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, pauseMs));
  }
}
