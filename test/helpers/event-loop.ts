/**
 * The event loop's longest stall while `work` runs: the longest time between two turns of a
 * 10 ms timer (its start and end included). A loop held by a synchronous wait stalls for the
 * whole wait; a free one, however loaded the machine, for far less.
 */
export async function stallDuring<T>(work: () => Promise<T>): Promise<{ stall: number; ms: number; result: PromiseSettledResult<T> }> {
  const started = Date.now();
  let last = started;
  let stall = 0;
  const timer = setInterval(() => {
    const now = Date.now();
    stall = Math.max(stall, now - last);
    last = now;
  }, 10);
  const [result] = await Promise.allSettled([work()]);
  clearInterval(timer);
  const ended = Date.now();
  return { stall: Math.max(stall, ended - last), ms: ended - started, result };
}
