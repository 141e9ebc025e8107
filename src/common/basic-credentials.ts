/**
 * Client credentials from an HTTP Basic header, decoded as RFC 6749 §2.3.1 says (the user
 * and password are form-urlencoded before base64); null when the header is not well-formed.
 * An empty user or password is well-formed (`Og==` is ":", what a form left blank sends): it is
 * given as is, for the caller to say which credential is missing.
 */
export function decodeBasic(header: string | undefined): { clientId: string; secret: string } | null {
  const match = /^Basic\s+([A-Za-z0-9+/=]+)\s*$/i.exec(header ?? '');
  const decoded = match ? Buffer.from(match[1], 'base64').toString('utf8') : '';
  const colon = decoded.indexOf(':');
  if (colon < 0) return null;
  try {
    const unform = (s: string): string => decodeURIComponent(s.replace(/\+/g, ' '));
    return { clientId: unform(decoded.slice(0, colon)), secret: unform(decoded.slice(colon + 1)) };
  } catch {
    return null;
  }
}
