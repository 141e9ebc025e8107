/**
 * Runs work one at a time, in the order it came, holding at most `max` of weight (bytes, say)
 * waiting or under way: work that would take it past that is refused at once with the error
 * `full` makes, unless nothing is held (so that any one piece of work can run).
 */
export class SerialQueue {
  private tail: Promise<unknown> = Promise.resolve();
  private held = 0;

  constructor(
    private readonly max: number,
    private readonly full: () => Error,
  ) {}

  /** The weight of the work under way or waiting. */
  get size(): number {
    return this.held;
  }

  run<T>(work: () => Promise<T>, weight = 1): Promise<T> {
    if (this.held > 0 && this.held + weight > this.max) return Promise.reject(this.full());
    this.held += weight;
    const run = this.tail.then(work, work).finally(() => (this.held -= weight));
    this.tail = run.catch(() => undefined);
    return run;
  }
}
