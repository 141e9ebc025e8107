/**
 * Runs work one at a time, holding at most `max` of weight (bytes, say) waiting or under way:
 * work that would take it past that is refused at once with the error `full` makes, unless
 * nothing is held (so that any one piece of work can run). Work may name its owner (a
 * credential): owners take turns, each one's work in the order it came, and one owner holds at
 * most half of `max` (its first piece of work fits whatever its weight, as on an empty queue),
 * so that one owner neither fills the queue nor keeps others waiting behind all its work.
 * Work without an owner runs in the order it came, as one owner's does.
 */
export class SerialQueue {
  private held = 0;
  private readonly heldBy = new Map<string, number>();
  /** The starts of waiting work, by owner, owners in their turn's order. */
  private readonly waiting = new Map<string, (() => void)[]>();
  private busy = false;

  constructor(
    private readonly max: number,
    private readonly full: () => Error,
  ) {}

  /** The weight of the work under way or waiting. */
  get size(): number {
    return this.held;
  }

  run<T>(work: () => Promise<T>, weight = 1, owner = ''): Promise<T> {
    const mine = this.heldBy.get(owner) ?? 0;
    if (this.held > 0 && this.held + weight > this.max) return Promise.reject(this.full());
    if (owner !== '' && mine > 0 && mine + weight > this.max / 2) return Promise.reject(this.full());
    this.held += weight;
    this.heldBy.set(owner, mine + weight);
    const started = new Promise<void>((start) => {
      const line = this.waiting.get(owner) ?? [];
      line.push(start);
      this.waiting.set(owner, line);
    });
    this.next();
    return started.then(work).finally(() => {
      this.held -= weight;
      const left = (this.heldBy.get(owner) ?? weight) - weight;
      if (left > 0) this.heldBy.set(owner, left);
      else this.heldBy.delete(owner);
      this.busy = false;
      this.next();
    });
  }

  /** Starts the next owner's first waiting work, unless work is under way; that owner's turn comes again after the others'. */
  private next(): void {
    if (this.busy) return;
    const [owner, line] = this.waiting.entries().next().value ?? [];
    if (owner === undefined || line === undefined) return;
    this.waiting.delete(owner);
    const start = line.shift()!;
    if (line.length > 0) this.waiting.set(owner, line);
    this.busy = true;
    start();
  }
}
