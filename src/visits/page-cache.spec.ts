import { PageCache } from './page-cache.js';

describe('PageCache', () => {
  const page = (n: number, fill = 1): Buffer => Buffer.alloc(n, fill);

  it('returns what was stored and keeps within its byte budget, dropping the least recently used', () => {
    const cache = new PageCache(400);
    cache.set('a', page(100));
    cache.set('b', page(100));
    cache.set('c', page(100));
    expect(cache.get('a')?.length).toBe(100);
    cache.set('d', page(100));
    cache.set('e', page(100));
    expect(cache.size).toEqual({ pages: 4, bytes: 400 });
    expect(cache.get('b')).toBeUndefined();
    expect(cache.get('a')).toBeDefined();
  });

  it('does not keep a page larger than a quarter of the budget', () => {
    const cache = new PageCache(400);
    cache.set('big', page(101));
    expect(cache.get('big')).toBeUndefined();
    expect(cache.size.bytes).toBe(0);
  });

  it('replaces a page stored again under the same key', () => {
    const cache = new PageCache(400);
    cache.set('a', page(50, 1));
    cache.set('a', page(80, 2));
    expect(cache.size).toEqual({ pages: 1, bytes: 80 });
    expect(cache.get('a')![0]).toBe(2);
  });
});
