/** Buffers smaller than this are allocated as usual and never kept: the allocator reuses them well. */
export const POOLED_MIN_BYTES = 64 * 1024;

/** Size classes per power of two: a buffer is at most an eighth larger than asked for. */
const CLASSES_PER_DOUBLING = 8;

/**
 * How many classes above the one asked for a kept buffer may be of: estimates of a page's size
 * move with the pages sent before it, and one that crosses a class boundary would otherwise
 * find nothing kept and take a new buffer while one an eighth larger lies unused.
 */
const CLASSES_ABOVE = 2;

/** The size class `bytes` is rounded up to: 2^k × (1 + j/8). */
export function sizeClass(bytes: number): number {
  if (bytes <= POOLED_MIN_BYTES) return POOLED_MIN_BYTES;
  const power = 2 ** Math.floor(Math.log2(bytes));
  const step = power / CLASSES_PER_DOUBLING;
  return Math.ceil(bytes / step) * step;
}

/**
 * Large response bodies given back once written, to be written into again. A page read from
 * the database is written into a fresh buffer of hundreds of KB to megabytes; allocating one
 * per page costs more than reading the page: above the allocator's mmap threshold every
 * buffer is a new mapping, faulted in page by page as it is written and unmapped when
 * collected, and the dead buffers, counted as V8's external memory, start full collections.
 * A buffer taken from here was written before and is already in memory.
 *
 * Buffers are kept by size class (see sizeClass), up to `maxBytes` in all and no more than
 * `room()` gives when one is given back (the room left in a budget the kept buffers share
 * with the bodies being written, see PagesInFlight); what does not fit is left to the garbage
 * collector. Only a buffer's last holder gives it back (see PooledBody): a buffer given back
 * while a response still writes it would send another page's bytes.
 */
export class BodyPool {
  /** The buffers kept, the one given back longest ago first. */
  private readonly kept: Buffer[] = [];
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly room: () => number = () => Infinity,
  ) {}

  /** The bytes of the buffers kept now. */
  get freeBytes(): number {
    return this.bytes;
  }

  /**
   * A buffer of at least `bytes` (its contents are old bytes): the smallest kept one no more
   * than CLASSES_ABOVE classes larger (the latest given back of its size), or a new one.
   */
  take(bytes: number): Buffer {
    if (bytes < POOLED_MIN_BYTES) return Buffer.allocUnsafe(bytes);
    const size = sizeClass(bytes);
    let ceiling = size;
    for (let n = 0; n < CLASSES_ABOVE; n++) ceiling = sizeClass(ceiling + 1);
    let best = -1;
    for (let i = this.kept.length - 1; i >= 0; i--) {
      const length = this.kept[i].length;
      if (length >= size && length <= ceiling && (best === -1 || length < this.kept[best].length)) best = i;
    }
    if (best === -1) return Buffer.allocUnsafeSlow(size);
    const [buffer] = this.kept.splice(best, 1);
    this.bytes -= buffer.length;
    return buffer;
  }

  /**
   * Keeps `buffer` for a later `take` if it is one of the pool's sizes and fits in what the
   * pool may keep (see `room`), letting go of the buffers given back longest ago to make room
   * for it: the sizes wanted now are those of the pages just sent. Nobody may use it after this.
   */
  give(buffer: Buffer): void {
    const size = buffer.length;
    if (size < POOLED_MIN_BYTES || size !== sizeClass(size) || buffer.byteOffset !== 0 || buffer.buffer.byteLength !== size) return;
    const limit = Math.min(this.maxBytes, this.room());
    if (size > limit) return;
    while (this.bytes + size > limit) this.bytes -= this.kept.shift()!.length;
    this.kept.push(buffer);
    this.bytes += size;
  }

  /** Lets every kept buffer go (for the garbage collector to free), giving the bytes let go. */
  letGo(): number {
    const bytes = this.bytes;
    this.kept.length = 0;
    this.bytes = 0;
    return bytes;
  }
}

/**
 * A buffer of the pool and its holders: a render while it writes the body, the page cache
 * while it keeps the page, every response while it writes it. Each takes a hold and calls its
 * release once; the buffer goes back to the pool when the last hold is released. A release
 * called again does nothing, so a holder cannot give back another's hold.
 */
export class PooledBody {
  private holds = 0;

  constructor(
    private readonly pool: BodyPool,
    /** The whole buffer the body lies in (the body may be the start of it). */
    readonly buffer: Buffer,
  ) {}

  /** A hold on the buffer, and the function that releases it. */
  hold(): () => void {
    if (this.holds < 0) throw new Error('the body went back to the pool: it can no longer be held');
    this.holds++;
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      if (--this.holds === 0) {
        this.holds = -1;
        this.pool.give(this.buffer);
      }
    };
  }
}

/** A hold on `body` when it lies in a buffer of the pool, and a release that does nothing when it does not. */
export function holdOf(body: PooledBody | null): () => void {
  return body?.hold() ?? (() => undefined);
}
