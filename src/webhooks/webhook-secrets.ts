import { randomBytes } from 'node:crypto';
import { SecretBox } from '../common/secret-box.js';

/** What every signing secret starts with, so that one is recognised in a partner's configuration. */
export const SIGNING_SECRET_PREFIX = 'whsec_';

/** A new signing secret: 256 random bits. The HMAC key is this text, exactly as shown. */
export function newSigningSecret(): string {
  return `${SIGNING_SECRET_PREFIX}${randomBytes(32).toString('base64url')}`;
}

/**
 * Signing secrets at rest: sealed (see the common SecretBox) under a key of their own, derived
 * from the server's API_KEY_HASH_KEY. A stolen table alone signs nothing.
 */
export function webhookSecretBox(serverSecret: string): SecretBox {
  return new SecretBox(serverSecret, 'results-service webhook signing secrets', 'webhook secret');
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
  let current: string;
  try {
    current = box.open(stored.secret);
  } catch {
    throw new Error('the signing secret cannot be decrypted (was API_KEY_HASH_KEY changed?): rotate the secret');
  }
  const secrets = [current];
  if (stored.previousSecret && stored.previousSecretUntil && stored.previousSecretUntil > now) secrets.push(box.open(stored.previousSecret));
  return secrets;
}
