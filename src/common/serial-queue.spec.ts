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
});
