import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto';

const FORMAT = 'v1';

/**
 * Secrets the service must use again, kept at rest: AES-256-GCM under a key derived
 * (HKDF-SHA-256) from the server's API_KEY_HASH_KEY, which already guards the stored API keys,
 * and a label of their kind, so that each kind has its own key. A stolen table alone gives
 * none of them; the stored form is `v1.<iv>.<tag>.<ciphertext>` in base64url, and GCM's tag
 * makes an edited value fail to open rather than give garbage.
 */
export class SecretBox {
  private readonly key: Buffer;

  /** `label` names the kind of secret (the HKDF info), `kind` says it in the error of a value that is no sealed one. */
  constructor(
    serverSecret: string,
    label: string,
    private readonly kind: string,
  ) {
    this.key = Buffer.from(hkdfSync('sha256', serverSecret, Buffer.alloc(0), label, 32));
  }

  seal(secret: string): string {
    const iv = randomBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.key, iv);
    const sealed = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
    return [FORMAT, iv, cipher.getAuthTag(), sealed].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join('.');
  }

  open(stored: string): string {
    const [format, iv, tag, sealed, extra] = stored.split('.');
    if (format !== FORMAT || !iv || !tag || sealed === undefined || extra !== undefined) throw new Error(`not a sealed ${this.kind}`);
    const decipher = createDecipheriv('aes-256-gcm', this.key, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(sealed, 'base64url')), decipher.final()]).toString('utf8');
  }
}
