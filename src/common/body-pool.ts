/** Buffers smaller than this are allocated as usual and never kept: the allocator reuses them well. */
export const POOLED_MIN_BYTES = 64 * 1024;

/** Size classes per power of two: a buffer is at most an eighth larger than asked for. */
const CLASSES_PER_DOUBLING = 8;

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
  private readonly free = new Map<number, Buffer[]>();
  private bytes = 0;

  constructor(
    private readonly maxBytes: number,
    private readonly room: () => number = () => Infinity,
  ) {}

  /** The bytes of the buffers kept now. */
  get freeBytes(): number {
    return this.bytes;
  }

  /** A buffer of at least `bytes` (its contents are old bytes): one given back before, or a new one. */
  take(bytes: number): Buffer {
    if (bytes < POOLED_MIN_BYTES) return Buffer.allocUnsafe(bytes);
    const size = sizeClass(bytes);
    const buffer = this.free.get(size)?.pop();
    if (buffer === undefined) return Buffer.allocUnsafeSlow(size);
    this.bytes -= size;
    return buffer;
  }

  /** Keeps `buffer` for a later `take` if it is one of the pool's sizes and there is room; nobody may use it after this. */
  give(buffer: Buffer): void {
    const size = buffer.length;
    if (size < POOLED_MIN_BYTES || size !== sizeClass(size) || buffer.byteOffset !== 0 || buffer.buffer.byteLength !== size) return;
    if (this.bytes + size > Math.min(this.maxBytes, this.room())) return;
    let list = this.free.get(size);
    if (list === undefined) this.free.set(size, (list = []));
    list.push(buffer);
    this.bytes += size;
  }

  /** Lets every kept buffer go (for the garbage collector to free), giving the bytes let go. */
  letGo(): number {
    const bytes = this.bytes;
    this.free.clear();
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
