import { loadedOnce, loadSharp } from './sharp.js';

describe('loadedOnce', () => {
  it('loads once and gives every call that, and loads again after a load that failed', async () => {
    const outcomes: (() => Promise<string>)[] = [
      () => Promise.reject(Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' })),
      () => Promise.resolve('loaded'),
      () => Promise.resolve('loaded again'),
    ];
    let loads = 0;
    const load = loadedOnce(() => outcomes[loads++]());
    await expect(load()).rejects.toMatchObject({ code: 'EMFILE' });
    expect(await Promise.all([load(), load()])).toEqual(['loaded', 'loaded']);
    expect(await load()).toBe('loaded');
    expect(loads).toBe(2);
  });
});

describe('loadSharp', () => {
  it('gives the library, the same each time', async () => {
    const sharp = await loadSharp();
    expect(typeof sharp).toBe('function');
    expect(await loadSharp()).toBe(sharp);
    const png = await sharp({ create: { width: 2, height: 1, channels: 3, background: '#ff0000' } }).png().toBuffer();
    expect((await sharp(png).metadata()).width).toBe(2);
  });
});
