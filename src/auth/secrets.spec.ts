import { hashApiKey, hashSecret, newApiKey, verifySecret } from './secrets.js';

describe('client secrets', () => {
  it('are stored as salted scrypt hashes that verify only the right secret', async () => {
    const hash = await hashSecret('correct horse');
    expect(hash).toMatch(/^scrypt\$32768\$8\$1\$[\w-]{22}\$[\w-]{43}$/);
    expect(hash).not.toContain('correct horse');
    expect(await verifySecret('correct horse', hash)).toBe(true);
    expect(await verifySecret('correct horsE', hash)).toBe(false);
    expect(await hashSecret('correct horse')).not.toBe(hash);
  });

  it('refuse a malformed stored hash instead of throwing', async () => {
    expect(await verifySecret('x', 'plain-text')).toBe(false);
    expect(await verifySecret('x', 'scrypt$1$2$3')).toBe(false);
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
