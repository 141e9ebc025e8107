import { createHmac } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { clientSecretKey, hashApiKey, hashSecret, needsUpgrade, newApiKey, newClientId, newClientSecret, randomToken, scryptSecretHash, verifySecret } from './secrets.js';

const KEY = clientSecretKey('key-one-0123456789');

describe('client secrets', () => {
  it('are stored as HMAC-SHA-256 under the key, and verify only the right secret', async () => {
    const secret = randomToken(32);
    const hash = hashSecret(secret, KEY);
    expect(hash).toMatch(/^hmac-sha256\$[0-9a-f]{64}$/);
    expect(hash).toBe(`hmac-sha256$${createHmac('sha256', KEY).update(secret).digest('hex')}`);
    expect(hash).not.toContain(secret);
    expect(await verifySecret(secret, hash, KEY)).toBe(true);
    expect(await verifySecret(`${secret.slice(0, -1)}x`, hash, KEY)).toBe(false);
    expect(await verifySecret(secret, hash, clientSecretKey('key-two-0123456789'))).toBe(false);
  });

  it('are hashed under a key derived from the API key hash key, so the two hashes never match', async () => {
    const value = randomToken(32);
    // Every replica derives the same key.
    expect(clientSecretKey('key-one-0123456789').equals(KEY)).toBe(true);
    const asApiKey = hashApiKey(value, 'key-one-0123456789');
    expect(hashSecret(value, KEY)).not.toBe(`hmac-sha256$${asApiKey}`);
    expect(await verifySecret(value, `hmac-sha256$${asApiKey}`, KEY)).toBe(false);
  });

  it('still verify against a stored scrypt hash, which needs an upgrade', async () => {
    const hash = await scryptSecretHash('correct horse');
    expect(hash).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(hash).not.toContain('correct horse');
    expect(await verifySecret('correct horse', hash, KEY)).toBe(true);
    expect(await verifySecret('correct horsE', hash, KEY)).toBe(false);
    expect(await scryptSecretHash('correct horse')).not.toBe(hash);
    expect(needsUpgrade(hash)).toBe(true);
    expect(needsUpgrade(hashSecret('correct horse', KEY))).toBe(false);
  });

  it('refuse a stored hash of an unknown or malformed form instead of throwing', async () => {
    const hmac = hashSecret('x', KEY);
    const refused = [
      'plain-text',
      'x',
      '',
      hmac.toUpperCase(),
      hmac.replace('hmac-sha256$', 'hmac-sha512$'),
      hmac.slice(0, -2),
      `${hmac}00`,
      'scrypt$1$2$3',
      // scrypt refuses N = 3; an empty hash would otherwise match every secret.
      'scrypt$3$8$1$AAAAAAAAAAAAAAAAAAAAAA$AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA',
      'scrypt$16$8$1$AAAAAAAAAAAAAAAAAAAAAA$',
    ];
    for (const stored of refused) {
      expect([stored, await verifySecret('x', stored, KEY)]).toEqual([stored, false]);
      expect([stored, needsUpgrade(stored)]).toEqual([stored, true]);
    }
  });
});

describe('client secrets', () => {
  it('are 256-bit random values with a prefix of their own, which verify by their whole value', async () => {
    const secret = newClientSecret();
    expect(secret).toMatch(/^svcs_[\w-]{43}$/);
    expect(newClientSecret()).not.toBe(secret);
    const stored = hashSecret(secret, KEY);
    expect([await verifySecret(secret, stored, KEY), await verifySecret(secret.slice(5), stored, KEY)]).toEqual([true, false]);
  });
});

describe('API keys', () => {
  it('are 256-bit random values with a display prefix, stored as a keyed hash', () => {
    const { apiKey, prefix } = newApiKey();
    expect(apiKey).toMatch(/^svck_[\w-]{43}$/);
    expect(prefix).toBe(apiKey.slice(0, 12));
    expect(hashApiKey(apiKey, 'key-one-0123456789')).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(apiKey, 'key-one-0123456789')).not.toBe(hashApiKey(apiKey, 'key-two-0123456789'));
    expect(newApiKey().apiKey).not.toBe(apiKey);
  });
});

describe('client ids and secrets in HTTP Basic', () => {
  it('hold only characters URL-encoding leaves as they are, as docs/interface.md tells partners whose library skips it', () => {
    // requests' HTTPBasicAuth, Authlib 1.2 and Ruby's oauth2 1.4 Base64-encode id:secret without URL-encoding them first.
    for (let i = 0; i < 200; i++) {
      for (const value of [newClientId(), randomToken(32)]) expect([value, encodeURIComponent(value) === value]).toEqual([value, true]);
    }
    const page = readFileSync(new URL('../../docs/interface.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    expect(page).toContain('The client ids and secrets the service issues hold only letters, digits, `_` and `-`, which URL-encoding leaves as they are');
    expect(page).toContain('is a 401 `invalid_client` (`The Basic credentials are malformed.`)');
  });
});
