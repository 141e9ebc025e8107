import { createHmac, timingSafeEqual } from 'node:crypto';

/**
 * True when `signature` (the svc-signature header) signs `rawBody` (the request body exactly as
 * received) with `secret`, and was made within the last 5 minutes (older: a replay).
 */
export function verifyWebhook(rawBody: string | Buffer, signature: string, secret: string, nowMs = Date.now()): boolean {
  const fields = signature.split(',').map((field) => field.split('='));
  const t = Number(fields.find(([key]) => key === 't')?.[1]);
  if (!Number.isInteger(t) || Math.abs(nowMs / 1000 - t) > 300) return false;
  const expected = createHmac('sha256', secret).update(`${t}.`).update(rawBody).digest();
  return fields.some(([key, value = '']) => key === 'v1' && /^[0-9a-f]{64}$/.test(value) && timingSafeEqual(Buffer.from(value, 'hex'), expected));
}
