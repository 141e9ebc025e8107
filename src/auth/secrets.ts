import { createHmac, randomBytes, scrypt as scryptCallback, timingSafeEqual, type ScryptOptions } from 'node:crypto';

function scrypt(secret: string, salt: Buffer, keylen: number, options: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scryptCallback(secret, salt, keylen, options, (error, key) => (error ? reject(error) : resolve(key))),
  );
}

const SCRYPT = { N: 1 << 15, r: 8, p: 1, maxmem: 64 * 1024 * 1024 };
const KEY_LENGTH = 32;
const HMAC_PREFIX = 'hmac-sha256$';
const HMAC_HASH = /^hmac-sha256\$[0-9a-f]{64}$/;

export function randomToken(bytes = 32): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * The key client secrets are hashed under: derived from API_KEY_HASH_KEY with a label of its
 * own, not that key itself, so that a secret's stored hash and an API key's stored hash are
 * never interchangeable: a value presented as one never matches a hash stored for the other.
 */
export function clientSecretKey(apiKeyHashKey: string): Buffer {
  return createHmac('sha256', apiKeyHashKey).update('client-secrets').digest();
}

function secretDigest(secret: string, key: Buffer): Buffer {
  return createHmac('sha256', key).update(secret).digest();
}

/**
 * What a failed token request tried, as the failure counts keep it (TokenFailuresService): the
 * same wrong secret sent again is no new guess. A truncated HMAC under a label of its own, so
 * that it is never a secret's stored form, and tells nothing without the key.
 */
export function guessDigest(secret: string, key: Buffer): string {
  return createHmac('sha256', key).update('failed-guess\0').update(secret).digest('base64url').slice(0, 22);
}

/**
 * A client secret's stored form: `hmac-sha256$<hex>`, HMAC-SHA-256 under clientSecretKey().
 * Secrets are 256-bit random values the service generates: no dictionary or brute force
 * reaches one, so a salt or a slow KDF would only add cost to every token request. Without
 * the key a stolen table is useless, as it is for API keys.
 */
export function hashSecret(secret: string, key: Buffer): string {
  return HMAC_PREFIX + secretDigest(secret, key).toString('hex');
}

/**
 * The form secrets were stored in before: `scrypt$N$r$p$salt$hash`, a slow KDF with a random
 * salt. Stored hashes of this form still verify, and are then replaced (needsUpgrade); only
 * tests write new ones, to stand for what older databases hold.
 */
export async function scryptSecretHash(secret: string): Promise<string> {
  const salt = randomBytes(16);
  const hash = await scrypt(secret, salt, KEY_LENGTH, SCRYPT);
  return ['scrypt', SCRYPT.N, SCRYPT.r, SCRYPT.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Whether a stored hash, once a secret verified against it, should be replaced by hashSecret()'s form. */
export function needsUpgrade(stored: string): boolean {
  return !HMAC_HASH.test(stored);
}

/** Compares a presented secret with its stored hash, of either form, in constant time; false for any other form. */
export async function verifySecret(secret: string, stored: string, key: Buffer): Promise<boolean> {
  if (HMAC_HASH.test(stored)) {
    return timingSafeEqual(secretDigest(secret, key), Buffer.from(stored.slice(HMAC_PREFIX.length), 'hex'));
  }
  return stored.startsWith('scrypt$') ? verifyScrypt(secret, stored) : false;
}

/** A credential's stored secrets: the current one, and the one a rotation kept for a while (see Credential). */
export interface StoredSecrets {
  secretHash: string;
  previousSecretHash: string | null;
  previousSecretUntil: Date | null;
}

/**
 * Which of a credential's secrets `secret` is: the current one, the one before the last
 * rotation while it is still kept (until `previousSecretUntil`, by `now`), or neither (null).
 */
export async function matchingSecret(secret: string, stored: StoredSecrets, key: Buffer, now: number): Promise<'current' | 'previous' | null> {
  if (await verifySecret(secret, stored.secretHash, key)) return 'current';
  const { previousSecretHash: previous, previousSecretUntil: until } = stored;
  if (previous !== null && until !== null && now < until.getTime() && (await verifySecret(secret, previous, key))) return 'previous';
  return null;
}

/**
 * A malformed scrypt hash verifies nothing rather than throwing: parameters scrypt refuses, or
 * a hash of another length than was ever written (an empty one would match every secret).
 */
async function verifyScrypt(secret: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6) return false;
  const [, n, r, p, salt, hash] = parts as [string, string, string, string, string, string];
  const expected = Buffer.from(hash, 'base64url');
  if (expected.length !== KEY_LENGTH) return false;
  const options = { N: Number(n), r: Number(r), p: Number(p), maxmem: SCRYPT.maxmem };
  const actual = await scrypt(secret, Buffer.from(salt, 'base64url'), expected.length, options).catch(() => null);
  return actual !== null && timingSafeEqual(actual, expected);
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

/**
 * Client secrets begin with `svcs_`, as API keys with `svck_` and webhook secrets with `whsec_`:
 * one pasted where it does not belong (a request id, a query value, a ticket) is known by its
 * form and redacted in logs and answers, and a secret scanner can look for it. Secrets issued
 * before had no prefix, and still verify: a secret is compared whole, whatever its form.
 */
export const CLIENT_SECRET_PREFIX = 'svcs_';

export function newClientSecret(): string {
  return `${CLIENT_SECRET_PREFIX}${randomToken(32)}`;
}

export function newClientId(): string {
  return `svc_${randomBytes(10).toString('hex')}`;
}
