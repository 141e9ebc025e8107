import { createHmac } from 'node:crypto';

/**
 * The `svc-signature` header (Stripe's scheme): `t=<unix seconds>,v1=<hex HMAC-SHA-256 of
 * "<t>.<raw body>">`, one `v1` per secret that signs (two for a day after a rotation, the
 * newest first), so a receiver holding either verifies.
 */
export function signatureHeader(body: string, secrets: readonly string[], at: Date): string {
  const t = Math.floor(at.getTime() / 1000);
  const signatures = secrets.map((secret) => `v1=${createHmac('sha256', secret).update(`${t}.${body}`).digest('hex')}`);
  return [`t=${t}`, ...signatures].join(',');
}
