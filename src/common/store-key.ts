import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** Digests of the values seen most recently: the same API key comes with every request of a partner. */
const recent = new LRUCache<string, string>({ max: 10_000 });

/**
 * A short, fixed-length digest of a caller-supplied value (an API key, a client id) to name
 * a counter by: the value itself never reaches a store, and its length cannot grow the keys.
 */
export function storeKeyDigest(value: string): string {
  let digest = recent.get(value);
  if (digest === undefined) {
    digest = createHash('sha256').update(value).digest('base64url').slice(0, 22);
    // Long values are not kept: a caller could fill the memory with them.
    if (value.length <= 256) recent.set(value, digest);
  }
  return digest;
}
