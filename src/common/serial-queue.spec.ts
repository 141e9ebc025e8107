import { SerialQueue } from './serial-queue.js';

describe('SerialQueue', () => {
  it('runs work one at a time in order, refuses what is past its bound at once, and takes more as room is made', async () => {
    const queue = new SerialQueue(2, () => new Error('full'));
    const order: string[] = [];
    let release!: () => void;
    const first = queue.run(() => new Promise<string>((resolve) => (release = () => resolve('a'))).then((v) => (order.push(v), v)));
    const second = queue.run(() => (order.push('b'), Promise.resolve('b')));
    expect(queue.size).toBe(2);
    await expect(queue.run(() => Promise.resolve('c'))).rejects.toThrow('full');
    expect(order).toEqual([]);
    release();
    expect(await first).toBe('a');
    expect(await second).toBe('b');
    expect(order).toEqual(['a', 'b']);
    expect(queue.size).toBe(0);
    expect(await queue.run(() => Promise.resolve('d'))).toBe('d');
  });

  it('weighs work: a light one fits beside others, a heavy one waits for none but is refused beside them', async () => {
    const queue = new SerialQueue(10, () => new Error('full'));
    let release!: () => void;
    const heavy = queue.run(() => new Promise<void>((resolve) => (release = resolve)), 25);
    expect(queue.size).toBe(25);
    await expect(queue.run(() => Promise.resolve('light'), 1)).rejects.toThrow('full');
    release();
    await heavy;
    const light = [queue.run(() => Promise.resolve(1), 4), queue.run(() => Promise.resolve(2), 4)];
    await expect(queue.run(() => Promise.resolve(3), 4)).rejects.toThrow('full');
    expect(await Promise.all(light)).toEqual([1, 2]);
  });

  it('goes on after a failed run', async () => {
    const queue = new SerialQueue(1, () => new Error('full'));
    await expect(queue.run(() => Promise.reject(new Error('boom')))).rejects.toThrow('boom');
    expect(await queue.run(() => Promise.resolve('next'))).toBe('next');
  });

  it('lets owners take turns, each one in the order its work came', async () => {
    const queue = new SerialQueue(100, () => new Error('full'));
    const order: string[] = [];
    let release!: () => void;
    const first = queue.run(() => new Promise<void>((resolve) => (release = resolve)).then(() => void order.push('a1')), 1, 'a');
    const runs = [
      queue.run(() => Promise.resolve(void order.push('a2')), 1, 'a'),
      queue.run(() => Promise.resolve(void order.push('a3')), 1, 'a'),
      queue.run(() => Promise.resolve(void order.push('a4')), 1, 'a'),
      queue.run(() => Promise.resolve(void order.push('b1')), 1, 'b'),
      queue.run(() => Promise.resolve(void order.push('b2')), 1, 'b'),
      queue.run(() => Promise.resolve(void order.push('c1')), 1, 'c'),
    ];
    // Work starts on a later turn of the event loop.
    await new Promise((resolve) => setImmediate(resolve));
    release();
    await Promise.all([first, ...runs]);
    // Not a1 a2 a3 a4 b1 b2 c1: b and c do not wait behind all of a's work.
    expect(order).toEqual(['a1', 'a2', 'b1', 'c1', 'a3', 'b2', 'a4']);
    expect(queue.size).toBe(0);
  });

  it("holds at most half of its bound for one owner, the owner's first work whatever its weight", async () => {
    const queue = new SerialQueue(10, () => new Error('full'));
    let release!: () => void;
    const held = queue.run(() => new Promise<void>((resolve) => (release = resolve)), 4, 'a');
    const second = queue.run(() => Promise.resolve('a'), 1, 'a');
    // a holds 5 of 10: no more of a's, while b's still fit.
    await expect(queue.run(() => Promise.resolve('a'), 1, 'a')).rejects.toThrow('full');
    const other = queue.run(() => Promise.resolve('b'), 5, 'b');
    expect(queue.size).toBe(10);
    release();
    await held;
    expect(await Promise.all([second, other])).toEqual(['a', 'b']);
    // Alone on an empty queue, one piece of work of any weight.
    expect(await queue.run(() => Promise.resolve('heavy'), 25, 'a')).toBe('heavy');
  });

  it('goes on when the work of an owner fails, and ends with nothing held', async () => {
    const queue = new SerialQueue(10, () => new Error('full'));
    const failed = queue.run(() => Promise.reject(new Error('boom')), 2, 'a');
    const next = queue.run(() => Promise.resolve('b'), 2, 'b');
    await expect(failed).rejects.toThrow('boom');
    expect(await next).toBe('b');
    expect(queue.size).toBe(0);
  });
});
