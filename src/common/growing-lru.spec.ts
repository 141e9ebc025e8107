import { growingLru } from './growing-lru.js';

describe('growingLru', () => {
  it('keeps at most its capacity, the least recently used leaving first', () => {
    const cache = growingLru<string, number>(3);
    for (const key of ['a', 'b', 'c']) cache.set(key, key.charCodeAt(0));
    expect(cache.get('a')).toBe(97);
    cache.set('d', 100);
    expect(cache.size).toBe(3);
    expect([...cache.keys()].sort()).toEqual(['a', 'c', 'd']);
    for (let i = 0; i < 1000; i++) cache.set(`k${i}`, i);
    expect(cache.size).toBe(3);
    expect([...cache.keys()]).toEqual(['k999', 'k998', 'k997']);
  });

  it('allocates for the entries it holds, not for its capacity', () => {
    const before = process.memoryUsage();
    // With lru-cache's `max`, ten million entries would be allocated at once: some 300 MB.
    const cache = growingLru<string, number>(10_000_000, { ttl: 60_000 });
    cache.set('only', 1);
    const after = process.memoryUsage();
    const grown = after.heapUsed - before.heapUsed + (after.arrayBuffers - before.arrayBuffers);
    expect(grown).toBeLessThan(5_000_000);
    expect(cache.get('only')).toBe(1);
  });

  it('keeps an entry only for its ttl', () => {
    let now = 1_000_000;
    const cache = growingLru<string, number>(10, { ttl: 1000, ttlResolution: 0, perf: { now: () => now } });
    cache.set('a', 1);
    now = 1_000_999;
    expect(cache.get('a')).toBe(1);
    now = 1_001_001;
    expect(cache.get('a')).toBeUndefined();
  });
});
