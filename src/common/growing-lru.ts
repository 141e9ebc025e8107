import { LRUCache } from 'lru-cache';

/** lru-cache's options, less the bounds growingLru sets. */
export type GrowingLruOptions<K extends NonNullable<unknown>, V extends NonNullable<unknown>> = Omit<LRUCache.Options<K, V, unknown>, 'max' | 'maxSize' | 'sizeCalculation'>;

/**
 * A least-recently-used cache of at most `capacity` entries whose storage grows with its
 * entries. Given `max`, lru-cache allocates its lists for every entry at once (some 30 bytes
 * an entry, twice that with a ttl): the caches that bound what a flood of made-up keys could
 * fill (rate-limit windows, token failures, data versions) held about 19 MB from start-up
 * while nearly empty. Counting each entry as 1 against `maxSize` keeps the same bound and the
 * same order of eviction, with the lists grown as entries come. Given `sizeOf`, `capacity` is
 * the sum of what it gives instead (bytes, for keys of any length).
 */
export function growingLru<K extends NonNullable<unknown>, V extends NonNullable<unknown>>(
  capacity: number,
  options: GrowingLruOptions<K, V> = {},
  sizeOf: (value: V, key: K) => number = () => 1,
): LRUCache<K, V> {
  return new LRUCache<K, V>({ ...options, maxSize: capacity, sizeCalculation: sizeOf });
}
