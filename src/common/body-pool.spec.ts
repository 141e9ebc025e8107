import { BodyPool, POOLED_MIN_BYTES, PooledBody, sizeClass } from './body-pool.js';
import { ByteWriter } from './byte-writer.js';

const MB = 1024 * 1024;

describe('sizeClass', () => {
  it('rounds up by at most an eighth, to sizes that are their own class', () => {
    for (const bytes of [POOLED_MIN_BYTES + 1, 100_000, 426_277, 1_048_576, 4_213_517, 4_500_000, 9_999_999]) {
      const size = sizeClass(bytes);
      expect(size).toBeGreaterThanOrEqual(bytes);
      expect(size).toBeLessThanOrEqual(bytes * 1.125);
      expect(sizeClass(size)).toBe(size);
    }
    expect(sizeClass(1)).toBe(POOLED_MIN_BYTES);
  });
});

describe('BodyPool', () => {
  it('gives a buffer given back to the next take of its size class, and a new one otherwise', () => {
    const pool = new BodyPool(16 * MB);
    const first = pool.take(400_000);
    expect(first.length).toBe(sizeClass(400_000));
    pool.give(first);
    expect(pool.freeBytes).toBe(first.length);
    expect(pool.take(first.length - 10)).toBe(first);
    expect(pool.freeBytes).toBe(0);
    pool.give(first);
    const other = pool.take(first.length * 2);
    expect(other).not.toBe(first);
    expect(pool.freeBytes).toBe(first.length);
  });

  it('keeps no small buffers, no buffers of other sizes or views, and no more than its bytes', () => {
    const pool = new BodyPool(2 * MB);
    const small = pool.take(1000);
    expect(small.length).toBe(1000);
    pool.give(small);
    pool.give(Buffer.allocUnsafeSlow(POOLED_MIN_BYTES + 3));
    const whole = Buffer.allocUnsafeSlow(sizeClass(POOLED_MIN_BYTES * 2) * 2);
    pool.give(whole.subarray(0, sizeClass(POOLED_MIN_BYTES * 2)));
    expect(pool.freeBytes).toBe(0);
    const buffers = [pool.take(MB), pool.take(MB), pool.take(MB)];
    buffers.forEach((b) => pool.give(b));
    expect(pool.freeBytes).toBe(2 * MB);
  });

  it('keeps no more than the room it is given when a buffer comes back', () => {
    let room = 3 * MB;
    const pool = new BodyPool(16 * MB, () => room);
    const buffers = [pool.take(MB), pool.take(MB), pool.take(MB), pool.take(MB)];
    buffers.forEach((b) => pool.give(b));
    expect(pool.freeBytes).toBe(3 * MB);
    room = 0;
    pool.take(MB);
    pool.give(buffers[0]);
    expect(pool.freeBytes).toBe(2 * MB);
  });

  it('serves a take from a kept buffer up to two classes larger, the smallest such, and from none larger', () => {
    const pool = new BodyPool(64 * MB);
    const size = sizeClass(4_200_000);
    const twoUp = sizeClass(sizeClass(size + 1) + 1);
    const threeUp = sizeClass(twoUp + 1);
    const far = Buffer.allocUnsafeSlow(threeUp);
    const near = Buffer.allocUnsafeSlow(twoUp);
    pool.give(far);
    pool.give(near);
    expect(pool.take(4_200_000)).toBe(near);
    const fresh = pool.take(4_200_000);
    expect(fresh).not.toBe(far);
    expect(fresh.length).toBe(size);
    expect(pool.freeBytes).toBe(threeUp);
  });

  it('makes room for a buffer given back by letting go of those given back longest ago', () => {
    const pool = new BodyPool(3 * MB);
    const [a, b, c, d] = [pool.take(MB), pool.take(MB), pool.take(MB), pool.take(MB)];
    [a, b, c, d].forEach((buffer) => pool.give(buffer));
    expect(pool.freeBytes).toBe(3 * MB);
    const taken = [pool.take(MB), pool.take(MB), pool.take(MB)];
    // The very buffers given back (by identity: a deep comparison of 1 MB buffers of zeros could not tell a new one from them).
    expect([b, c, d].filter((buffer) => taken.includes(buffer))).toHaveLength(3);
    expect(pool.take(MB)).not.toBe(a);
  });

  it('lets every buffer go at once', () => {
    const pool = new BodyPool(16 * MB);
    const a = pool.take(MB);
    pool.give(a);
    pool.give(pool.take(3 * MB));
    expect(pool.letGo()).toBe(4 * MB);
    expect(pool.freeBytes).toBe(0);
    expect(pool.take(MB)).not.toBe(a);
  });
});

describe('PooledBody', () => {
  it('goes back to the pool when the last hold is released, each hold counting once', () => {
    const pool = new BodyPool(16 * MB);
    const body = new PooledBody(pool, pool.take(MB));
    const render = body.hold();
    const response = body.hold();
    render();
    render();
    expect(pool.freeBytes).toBe(0);
    response();
    expect(pool.freeBytes).toBe(MB);
    expect(() => body.hold()).toThrow('no longer be held');
    response();
    expect(pool.freeBytes).toBe(MB);
  });
});

describe('ByteWriter with a pool', () => {
  it('writes into a buffer of the pool, gives back the one it outgrew and returns the bytes where they lie', () => {
    const pool = new BodyPool(16 * MB);
    const out = new ByteWriter(POOLED_MIN_BYTES + 1, pool);
    const first = out.whole;
    const chunk = 'x'.repeat(50_000);
    for (let i = 0; i < 4; i++) out.text(chunk);
    expect(out.whole).not.toBe(first);
    expect(pool.take(first.length)).toBe(first);
    const result = out.result();
    expect(result.toString()).toBe(chunk.repeat(4));
    expect(result.buffer).toBe(out.whole.buffer);
    expect(result.byteOffset).toBe(0);
  });

  it('grows a pooled buffer by a quarter, not twice its size, when a page outgrows its guess', () => {
    const pool = new BodyPool(64 * MB);
    const out = new ByteWriter(4 * MB, pool);
    out.text('x'.repeat(4 * MB + 1000));
    expect(out.whole.length).toBe(sizeClass(5 * MB));
    expect(out.result().length).toBe(4 * MB + 1000);
  });
});
