import { createHmac, randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

function scrypt(secret: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(secret, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LENGTH = 32;

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/** A client secret's stored form: `scrypt$N$r$p$salt$hash`, a slow KDF with a random salt. */
export async function hashSecret(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(secret, salt, KEY_LENGTH, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Compares a presented secret with its stored hash in constant time. */
export async function verifySecret(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  const actual = await scrypt(secret, Buffer.from(salt, 'base64url'), expected.length, {
    N: Number(n),
    r: Number(r),
    p: Number(p),
    maxmem: SCRYPT.maxmem,
  });
  return actual.length === expected.length && timingSafeEqual(actual, expected);
}

/**
 * API keys are 256-bit random values, so a fast keyed hash (HMAC-SHA-256) is enough to
 * make a stolen table useless without the hash key; it also allows an indexed look-up.
 */
export function hashApiKey(apiKey: string, hashKey: string): string {
  return createHmac('sha256', hashKey).update(apiKey).digest('hex');
}

export const API_KEY_PREFIX = 'svck_';
export const DISPLAY_PREFIX_LENGTH = 12;

export function newApiKey(): { apiKey: string; prefix: string } {
  const apiKey = `${API_KEY_PREFIX}${randomToken(32)}`;
  return { apiKey, prefix: apiKey.slice(0, DISPLAY_PREFIX_LENGTH) };
}

export function newClientId(): string {
  return `svc_${randomBytes(10).toString('hex')}`;
}
