import type { BodyPool } from './body-pool.js';

/**
 * Builds a response body straight into one growing buffer. Joining thousands of strings
 * into one large string and encoding it afterwards costs several times more (the rope is
 * flattened, then copied again as UTF-8, and both copies go to the garbage collector).
 */
export class ByteWriter {
  private buffer: Buffer;
  private length = 0;

  /**
   * `expectedBytes`: the size the caller expects, so that a close guess never grows. With a
   * `pool`, the buffer is taken from it (and a buffer outgrown is given back to it): the
   * result then lies at the start of `buffer`, which the caller gives back once the result
   * is no longer used (see PooledBody).
   */
  constructor(
    expectedBytes: number,
    private readonly pool?: BodyPool,
  ) {
    const bytes = Math.max(expectedBytes, 256);
    this.buffer = pool ? pool.take(bytes) : Buffer.allocUnsafe(bytes);
  }

  /** The buffer written into, whose start `result()` is. */
  get whole(): Buffer {
    return this.buffer;
  }

  /** Appends the UTF-8 bytes of `text`. */
  text(text: string): this {
    // A UTF-16 code unit takes at most 3 bytes in UTF-8: only count exactly near the end.
    if (this.buffer.length - this.length < text.length * 3) this.reserve(Buffer.byteLength(text));
    this.length += this.buffer.write(text, this.length);
    return this;
  }

  /** Appends bytes as they are. */
  bytes(bytes: Buffer): this {
    this.reserve(bytes.length);
    this.length += bytes.copy(this.buffer, this.length);
    return this;
  }

  /**
   * The bytes written. Without a pool, when more than an eighth of the buffer is unused they
   * are copied into one of their own size, so that a cache keeping the result holds little
   * memory it does not count; with one, they stay where they are (a cache counts `whole`).
   */
  result(): Buffer {
    const bytes = this.buffer.subarray(0, this.length);
    if (this.pool) return bytes;
    return this.buffer.length - this.length > this.length / 8 ? Buffer.from(bytes) : bytes;
  }

  private reserve(bytes: number): void {
    const needed = this.length + bytes;
    if (needed <= this.buffer.length) return;
    const size = Math.max(needed, this.buffer.length * (this.pool ? 1.25 : 2));
    const grown = this.pool ? this.pool.take(size) : Buffer.allocUnsafe(size);
    this.buffer.copy(grown, 0, 0, this.length);
    // Nobody else has seen the outgrown buffer: it can be written into again.
    this.pool?.give(this.buffer);
    this.buffer = grown;
  }
}
