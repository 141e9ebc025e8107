/**
 * Turns for the DNS lookups of webhook deliveries. Node's `dns.lookup` (getaddrinfo, what a
 * socket connecting to a host name uses) runs in libuv's threadpool, four threads by default,
 * which the rest of the service shares: compressing responses (zlib), reading image files,
 * sharp's image work. A receiver whose DNS does not answer (its name servers down or dropping
 * queries) holds a thread per delivery for the resolver's whole timeout, and cannot be called
 * off: two such endpoints, two deliveries each, would hold all four, and every compressed
 * response, image read and upload of the service would wait behind them. So at most `size`
 * lookups run at once, at most one per host name: one receiver's DNS holds one thread at
 * most, and two threads stay the service's whatever the receivers' DNS does. A lookup waits
 * its turn in the order asked, passing over hosts already being looked up; one whose delivery
 * has ended meanwhile (its timeout) is dropped unstarted.
 */
export class LookupSlots {
  private readonly hostsRunning = new Set<string>();
  private waiting: { host: string; start: (done: () => void) => void; gone: () => boolean }[] = [];

  constructor(private readonly size: number) {}

  /** Lookups running now (for tests). */
  get running(): number {
    return this.hostsRunning.size;
  }

  /** Lookups waiting their turn (for tests). */
  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Runs `start` when `host` has its turn, unless `gone()` says by then that nobody waits for
   * the answer. `start` is given `done`, to call once the lookup has returned.
   */
  take(host: string, gone: () => boolean, start: (done: () => void) => void): void {
    this.waiting.push({ host, start, gone });
    this.next();
  }

  private next(): void {
    this.waiting = this.waiting.filter((entry) => !entry.gone());
    while (this.hostsRunning.size < this.size) {
      const at = this.waiting.findIndex((entry) => !this.hostsRunning.has(entry.host));
      if (at < 0) return;
      const [entry] = this.waiting.splice(at, 1);
      this.hostsRunning.add(entry.host);
      let done = false;
      entry.start(() => {
        if (done) return;
        done = true;
        this.hostsRunning.delete(entry.host);
        this.next();
      });
    }
  }
}
