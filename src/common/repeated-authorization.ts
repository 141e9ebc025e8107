/**
 * What the Authorization header of a request that sent more than one reads as. Node keeps
 * the first and drops the others, so a proxy that reads the last would see another caller than
 * the service (RFC 9110 §11.6.2 allows a single credential). The request is not refused at the
 * door: it goes through the checks every request goes through (the API key first, the rate
 * limit, the request line), where this value is a malformed credential: a 401 `invalid_token`
 * on the data endpoints, an `invalid_request` on the token endpoint.
 */
export const REPEATED_AUTHORIZATION = 'Repeated (more than one Authorization header)';

export const REPEATED_AUTHORIZATION_DETAIL = 'The request has more than one Authorization header; it must have one.';

/** How many Authorization headers the raw header list holds. */
export function authorizationCount(raw: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < raw.length; i += 2) {
    const name = raw[i];
    if (name.length === 13 && name.toLowerCase() === 'authorization') count++;
  }
  return count;
}
