import { ProblemException } from '../common/problem.js';

/**
 * The `WWW-Authenticate` challenges (RFC 9110 §11.6.1) the service answers a failed
 * authentication with, built in one place so the guards, the token endpoint and the
 * contract's examples name the same realm and parameters in the same order.
 */

/** The protection space of every challenge: the whole API is one. */
export const REALM = 'svc-results-api';

/** A parameter value as a quoted-string: quotes and backslashes are dropped, never escaped. */
function quoted(text: string): string {
  return `"${text.replace(/["\\]/g, '')}"`;
}

/** The service's own scheme for a missing or unknown API key; it names the header to send. */
export function apiKeyChallenge(): string {
  return `ApiKey realm=${quoted(REALM)}, header="svc-api-key"`;
}

/** HTTP Basic, for a failed client_secret_basic authentication at the token endpoint (RFC 6749 §5.2). */
export function basicChallenge(): string {
  return `Basic realm=${quoted(REALM)}, charset="UTF-8"`;
}

/**
 * The challenges of a token endpoint answer sent to a script in a browser page (a request
 * with `X-Requested-With: XMLHttpRequest`, as Swagger UI's Authorize sends): without Basic's,
 * which makes the browser stop the request for a login box of its own instead of handing the
 * script the `invalid_client` answer. The script authenticates by itself, as any OAuth client.
 */
export function withoutBasicChallenge(headers: Record<string, string>): Record<string, string> {
  const challenge = headers['WWW-Authenticate'];
  if (challenge === undefined) return headers;
  const basic = basicChallenge();
  const rest = challenge === basic ? '' : challenge.replace(`, ${basic}`, '');
  const { 'WWW-Authenticate': _dropped, ...others } = headers;
  return rest === '' ? others : { ...others, 'WWW-Authenticate': rest };
}

export interface BearerChallengeParameters {
  /** RFC 6750 §3.1: invalid_token for a token that was sent, insufficient_scope for one that lacks a scope. */
  error?: 'invalid_token' | 'insufficient_scope';
  /** Why, for a person reading the response. */
  description?: string;
  /** The scope the request needed (with insufficient_scope). */
  scope?: string;
}

/** RFC 6750 §3: the bare challenge when no token was sent, or with the error a token met. */
export function bearerChallenge({ error, description, scope }: BearerChallengeParameters = {}): string {
  const parameters = [`realm=${quoted(REALM)}`];
  if (error !== undefined) parameters.push(`error=${quoted(error)}`);
  if (description !== undefined) parameters.push(`error_description=${quoted(description)}`);
  if (scope !== undefined) parameters.push(`scope=${quoted(scope)}`);
  return `Bearer ${parameters.join(', ')}`;
}

/** The 401 for a request that sent no access token, from the guard or from a check after it. */
export function accessTokenRequired(): ProblemException {
  return new ProblemException(401, 'An access token is required: send Authorization: Bearer <token>.', {
    headers: { 'WWW-Authenticate': bearerChallenge() },
  });
}
