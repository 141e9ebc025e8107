import { createHash } from 'node:crypto';

/**
 * A short, fixed-length digest of a caller-supplied value (an API key, a client id) to name
 * a counter by: the value itself never reaches a store, and its length cannot grow the keys.
 */
export function storeKeyDigest(value: string): string {
  return createHash('sha256').update(value).digest('base64url').slice(0, 22);
}
