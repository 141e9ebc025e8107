import type { IncomingMessage } from 'node:http';
import { REPEATED_AUTHORIZATION } from '../../common/repeated-authorization.js';

/**
 * What follows `Bearer` in the Authorization header, whatever it is, or null when the request
 * carries no bearer credentials. A value that is not a well-formed token is returned as it is,
 * so that it is refused as an invalid token rather than taken for a missing one (and never
 * cut at a space, which would accept `Bearer <token> junk`).
 */
export function bearerCredentials(req: Pick<IncomingMessage, 'headers'>): string | null {
  const header = req.headers.authorization;
  if (typeof header !== 'string') return null;
  // A credential, malformed: refused as such (see JwtAuthGuard), never taken for a missing one.
  if (header === REPEATED_AUTHORIZATION) return header;
  const match = /^bearer(?:\s+([\s\S]*))?$/i.exec(header.trim());
  const value = match?.[1]?.trim();
  return value ? value : null;
}

/** RFC 7515 compact serialization: three base64url parts (an empty signature is refused by its alg). */
const COMPACT_JWS = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;

export function isCompactJws(token: string): boolean {
  return COMPACT_JWS.test(token);
}

/**
 * Whether the signature part is the one canonical base64url spelling of its bytes. The
 * decoder ignores the spare bits of the last character, so without this check one signature
 * would have several spellings, and a changed token would still verify.
 */
export function hasCanonicalSignature(token: string): boolean {
  const signature = token.slice(token.lastIndexOf('.') + 1);
  return Buffer.from(signature, 'base64url').toString('base64url') === signature;
}
