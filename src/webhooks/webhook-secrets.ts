import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

/** What every signing secret starts with, so that one is recognised in a partner's configuration. */
export const SIGNING_SECRET_PREFIX = 'whsec_';

/** A new signing secret: 256 random bits. The HMAC key is this text, exactly as shown. */
export function newSigningSecret(): string {
  return `${SIGNING_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

const FORMAT = 'v1';

/**
 * Signing secrets at rest: AES-256-GCM under a key derived (HKDF-SHA-256) from the server's
 * API_KEY_HASH_KEY, which already guards the stored API keys. A stolen table alone signs
 * nothing; the stored form is `v1.<iv>.<tag>.<ciphertext>` in base64url, and GCM's tag
 * makes an edited value fail to open rather than sign with garbage.
 */
export class SecretBox {
  private readonly key: Buffer;

  constructor(serverSecret: string) {
    this.key = Buffer.from(hkdfSync('sha256', serverSecret, Buffer.alloc(0), 'results-service webhook signing secrets', 32));
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [FORMAT, iv, cipher.getAuthTag(), sealed].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  open(stored: string): string {
    const [format, iv, tag, sealed, extra] = stored.split('.');
    if (format !== FORMAT || !iv || !tag || sealed === undefined || extra !== undefined) throw new Error('not a sealed webhook secret');
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8');
  }
}

/** Whether a sealed secret opens under this server key (it does not after API_KEY_HASH_KEY changed). */
export function opens(box: SecretBox, sealed: string): boolean {
  try {
    box.open(sealed);
    return true;
  } catch {
    return false;
  }
}

/**
 * A stored endpoint's secrets in clear that sign now: the current one, and the one before a
 * rotation while it lasts. Throws, saying what to do, when the current one does not open.
 */
export function signingSecrets(
  box: SecretBox,
  stored: { secret: string; previousSecret: string | null; previousSecretUntil: Date | null },
  now: Date,
): string[] {
  if (!opens(box, stored.secret)) throw new Error('the signing secret cannot be decrypted (was API_KEY_HASH_KEY changed?): rotate the secret');
  const secrets = [box.open(stored.secret)];
  if (stored.previousSecret && stored.previousSecretUntil && stored.previousSecretUntil > now) secrets.push(box.open(stored.previousSecret));
  return secrets;
}
