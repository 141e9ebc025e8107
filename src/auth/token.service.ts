import { randomUUID } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { SignJWT } from 'jose';
import { AppConfig } from '../config/app-config.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { countOf } from '../common/clock.js';
import { decodeBasic } from '../common/basic-credentials.js';
import { REPEATED_AUTHORIZATION, REPEATED_AUTHORIZATION_DETAIL } from '../common/repeated-authorization.js';
import { apiKeyNotValid } from './guards/api-key.guard.js';
import { TOKEN_FORM_MAX_LENGTH } from './dto/token.dto.js';
import { AuthCacheService, type CachedCredential } from './auth-cache.service.js';
import { AuthRepository } from './auth.repository.js';
import { apiKeyChallenge, basicChallenge, withoutBasicChallenge } from './challenges.js';
import { KeyringService, SIGNING_ALG } from './keyring.service.js';
import { OAuthException } from '../common/oauth-error.js';
import { isScope, Scope } from './scopes.js';
import { clientSecretKey, guessDigest, hashSecret, matchingSecret, needsUpgrade, type StoredSecrets } from './secrets.js';
import { TokenFailuresService } from './token-failures.service.js';

export const TOKEN_LIFETIME_SECONDS = 3600;
export const TOKEN_AUDIENCE = 'svc-results-api';
export const TOKEN_TYPE = 'at+jwt';

export interface TokenRequest {
  /** The svc-api-key header. */
  apiKey: string | undefined;
  /** The Authorization header, for client_secret_basic. */
  authorization: string | undefined;
  /** The form body. */
  form: Record<string, unknown>;
  /** Whether a script in a browser page sent it (see sentByScript). */
  fromScript?: boolean;
}

/**
 * Whether a script in a browser page sent the request: `X-Requested-With: XMLHttpRequest`
 * (Swagger UI's Authorize, many script libraries), or a browser's `Sec-Fetch-Mode` of a
 * fetch (`cors`, `same-origin`, `no-cors`: Swagger UI's "Try it out"), which browsers alone
 * send and a page cannot set. A form posted by the page itself (`navigate`) is no script: a
 * person is there to answer the login box.
 */
export function sentByScript(headers: Readonly<Record<string, string | string[] | undefined>>): boolean {
  const requestedWith = headers['x-requested-with'];
  if (typeof requestedWith === 'string' && requestedWith.trim().toLowerCase() === 'xmlhttprequest') return true;
  const mode = headers['sec-fetch-mode'];
  return typeof mode === 'string' && ['cors', 'same-origin', 'no-cors'].includes(mode.trim().toLowerCase());
}

export interface TokenResponse {
  access_token: string;
  expires_in: number;
  token_type: 'Bearer';
  scope: string;
}

/** A hash no secret matches, compared with for an unknown client: it costs what a known one does. */
const DUMMY_SECRETS: StoredSecrets = { secretHash: `hmac-sha256$${'0'.repeat(64)}`, previousSecretHash: null, previousSecretUntil: null };

/**
 * The challenge of a failed client_secret_basic authentication (RFC 6749 §5.2). A failed
 * client_secret_post gets none: standard OAuth clients then read the error from the body.
 */
const BASIC_CHALLENGE = { 'WWW-Authenticate': basicChallenge() };

const API_KEY_CHALLENGE = { 'WWW-Authenticate': apiKeyChallenge() };

/** A key refused on a request that authenticated by Basic: both schemes are challenged (RFC 6749 §5.2 asks for Basic's). */
const API_KEY_AND_BASIC_CHALLENGE = { 'WWW-Authenticate': `${apiKeyChallenge()}, ${basicChallenge()}` };

function formValue(form: Record<string, unknown>, name: string): string | undefined {
  let value = form[name];
  if (value === undefined) return undefined;
  // A parameter repeated (the parser gives a list): its empty values are omitted ones (RFC
  // 6749 §3.1), no second value beside the one given; two values are still a duplicate.
  if (Array.isArray(value)) {
    const given = value.filter((v) => v !== '');
    if (given.length === 0) return undefined;
    if (given.length === 1) value = given[0];
  }
  if (typeof value !== 'string') {
    throw new OAuthException('invalid_request', `The parameter '${name}' must be given once, as text.`);
  }
  // RFC 6749 §3.1: a parameter sent without a value is treated as omitted.
  if (value === '') return undefined;
  if (name in TOKEN_FORM_MAX_LENGTH) withinLimit(name as keyof typeof TOKEN_FORM_MAX_LENGTH, value, `The parameter '${name}'`);
  return value;
}

/** Refuses a value longer than the form takes for its field (`what` names it in the message): a malformed request, no guess of the secret. */
function withinLimit(name: keyof typeof TOKEN_FORM_MAX_LENGTH, value: string, what: string): void {
  const max = TOKEN_FORM_MAX_LENGTH[name];
  if (value.length > max) throw new OAuthException('invalid_request', `${what} must be at most ${max} characters.`);
}

/**
 * The client credentials of a Basic header; one left empty is absent, as in the form (RFC 6749
 * §3.1), and one longer than the form takes is refused as it is there: a malformed request,
 * not a guess of the secret (a secret of 300 characters was counted towards the lockout).
 */
function parseBasic(header: string): { clientId?: string; secret?: string } {
  const credentials = decodeBasic(header);
  if (!credentials) throw new OAuthException('invalid_client', 'The Basic credentials are malformed.', 401, BASIC_CHALLENGE);
  withinLimit('client_id', credentials.clientId, "The Basic credentials' client_id");
  withinLimit('client_secret', credentials.secret, "The Basic credentials' client_secret");
  return { clientId: credentials.clientId || undefined, secret: credentials.secret || undefined };
}

/**
 * The client-credentials grant (RFC 6749 §4.4) with the svc-api-key check, issuing RFC 9068
 * JWT access tokens signed by the keyring's current key.
 */
@Injectable()
export class TokenService {
  private readonly logger = new Logger('TokenService');
  private readonly secretKey: Buffer;

  constructor(
    private readonly cache: AuthCacheService,
    private readonly repo: AuthRepository,
    private readonly keyring: KeyringService,
    private readonly failures: TokenFailuresService,
    private readonly config: AppConfig,
    private readonly metrics: MetricsService,
  ) {
    this.secretKey = clientSecretKey(config.API_KEY_HASH_KEY);
  }

  /** Issues a token, counting what was issued and what was refused (by OAuth error). */
  async issue(request: TokenRequest): Promise<TokenResponse> {
    try {
      const response = await this.grant(request);
      this.metrics.tokensIssued.inc();
      return response;
    } catch (error) {
      if (!(error instanceof OAuthException)) throw error;
      this.metrics.tokenFailures.inc({ error: error.error });
      if (!request.fromScript) throw error;
      throw new OAuthException(error.error, error.description, error.getStatus(), withoutBasicChallenge(error.headers));
    }
  }

  private async grant(request: TokenRequest): Promise<TokenResponse> {
    const { form } = request;
    const grantType = formValue(form, 'grant_type');
    const bodyId = formValue(form, 'client_id');
    const bodySecret = formValue(form, 'client_secret');
    const scopeParam = formValue(form, 'scope');

    if (request.authorization === REPEATED_AUTHORIZATION) throw new OAuthException('invalid_request', REPEATED_AUTHORIZATION_DETAIL);
    // `Basic` with nothing after it is Basic without credentials (malformed), not another scheme.
    const basic = request.authorization !== undefined && /^basic(\s|$)/i.test(request.authorization);
    if (request.authorization !== undefined && !basic) {
      throw new OAuthException('invalid_request', 'Only Basic client authentication is accepted in the Authorization header.');
    }
    if (basic && bodySecret !== undefined) {
      throw new OAuthException(
        'invalid_request',
        'Send the client credentials either in the Authorization header or in the body, not both.',
      );
    }
    const auth = basic ? parseBasic(request.authorization!) : { clientId: bodyId, secret: bodySecret };
    if (basic && bodyId !== undefined && bodyId !== auth.clientId) {
      throw new OAuthException('invalid_request', "The body's client_id differs from the Basic credentials.");
    }
    if (!auth.clientId || auth.secret === undefined) {
      // The key first, as always: a request without a live key learns nothing else.
      await this.checkApiKey(undefined, request.apiKey, basic);
      // A 401 names a scheme to authenticate with (RFC 7235 §3.1): clients that send Basic only when challenged then do.
      throw new OAuthException('invalid_client', 'Client authentication is required: client_id and client_secret.', 401, BASIC_CHALLENGE);
    }
    if (grantType === undefined) throw new OAuthException('invalid_request', "The parameter 'grant_type' is required.");
    if (grantType !== 'client_credentials') {
      throw new OAuthException('unsupported_grant_type', "Only the 'client_credentials' grant is supported.");
    }

    const clientId = auth.clientId;
    await this.checkApiKey(clientId, request.apiKey, basic);
    const retryAfter = await this.failures.blockedFor(clientId);
    if (retryAfter > 0) {
      throw new OAuthException('slow_down', `Too many failed token requests for this client; retry after ${countOf(retryAfter, 'second')}.`, 429, {
        'Retry-After': String(retryAfter),
      });
    }
    const credential = await this.authenticate(clientId, auth.secret, basic);
    const scopes = this.grantedScopes(credential, scopeParam);
    return {
      access_token: await this.sign(credential.clientId, scopes),
      expires_in: TOKEN_LIFETIME_SECONDS,
      token_type: 'Bearer',
      scope: scopes.join(' '),
    };
  }

  /**
   * The svc-api-key must be valid, unrevoked and the client's own. Checked before the lockout
   * and the secret, so that a request without the client's key costs no secret hashing and no
   * credential read, and is no guess of the secret: it does not count towards the client's
   * lockout, which anyone who knows a client id could otherwise keep on for good. Without a
   * client id (no client credentials sent) the key need only be live.
   */
  private async checkApiKey(clientId: string | undefined, apiKey: string | undefined, basic: boolean): Promise<void> {
    const key = apiKey ? await this.cache.apiKey(apiKey) : null;
    if (key && !key.revoked && (clientId === undefined || key.credentialId === clientId)) return;
    const reason = !apiKey
      ? 'The svc-api-key header is required.'
      : !key || key.revoked
        ? apiKeyNotValid(apiKey)
        : 'The svc-api-key does not belong to this client.';
    throw new OAuthException('invalid_client', reason, 401, basic ? API_KEY_AND_BASIC_CHALLENGE : API_KEY_CHALLENGE);
  }

  private async authenticate(clientId: string, secret: string, basic: boolean): Promise<CachedCredential> {
    let credential = await this.cache.credential(clientId);
    let stored = credential?.credential ?? DUMMY_SECRETS;
    let matched = await matchingSecret(secret, stored, this.secretKey, Date.now());
    if (matched === null) {
      // The credential as this process read it, up to AUTH_CACHE_SECONDS ago: another process
      // may have rotated the secret (or added the credential) since. Read once more before the
      // refusal, so that a partner's new secret works on every replica at once and is never
      // counted as a guess. Wrong secrets are bounded by the token rate limit and the lockout.
      credential = await this.cache.credentialReadAgain(clientId);
      stored = credential?.credential ?? DUMMY_SECRETS;
      matched = await matchingSecret(secret, stored, this.secretKey, Date.now());
    }
    const matches = matched !== null;
    if (!credential || !matches || credential.disabled) {
      // The right secret of a disabled credential is no guess: a partner's job retrying while
      // it is disabled must not find it locked out once it is enabled again.
      if (!credential || !matches) await this.failures.recordFailure(clientId, guessDigest(secret, this.secretKey));
      throw new OAuthException('invalid_client', 'Client authentication failed.', 401, basic ? BASIC_CHALLENGE : {});
    }
    // The current secret's hash only: one kept from a rotation is let go in its time.
    if (matched === 'current' && needsUpgrade(stored.secretHash)) await this.upgradeSecretHash(clientId, stored.secretHash, secret);
    return credential;
  }

  /**
   * Replaces a hash of an older form (scrypt) with hashSecret()'s, once the secret verified
   * against it. Once the row holds the new form (written here, or already by another replica)
   * the cached credential, which holds the old one, is dropped. A failure only costs the old
   * form's slowness until the next success, so it is logged and the token issued.
   */
  private async upgradeSecretHash(clientId: string, stored: string, secret: string): Promise<void> {
    try {
      await this.repo.replaceSecretHash(clientId, stored, hashSecret(secret, this.secretKey));
      this.cache.forgetCredential(clientId);
    } catch (error) {
      this.logger.warn(`the secret hash of ${clientId} could not be upgraded: ${(error as Error).message}`);
    }
  }

  /** None asked: every assigned scope. Asked: must name svc-results-api, and only assigned scopes. */
  private grantedScopes(credential: CachedCredential, requested: string | undefined): string[] {
    const assigned = [...credential.scopes];
    if (requested === undefined) return assigned;
    // RFC 6749 §3.3: scope tokens of printable ASCII but " and \, separated by spaces; a tab
    // or a line end between them would make one unknown token that seems to lack the first.
    const other = /[^\x21\x23-\x5b\x5d-\x7e ]/.exec(requested);
    if (other) {
      const code = other[0].codePointAt(0)!.toString(16).toUpperCase().padStart(4, '0');
      throw new OAuthException('invalid_scope', `The scope holds U+${code}, which no scope has: scopes are separated by spaces only.`);
    }
    // A comma is a scope token's character, but no scope has one: a list written with commas.
    if (requested.includes(',')) throw new OAuthException('invalid_scope', 'The scope holds a comma, which no scope has: scopes are separated by spaces.');
    const asked = [...new Set(requested.split(' ').filter(Boolean))];
    if (!asked.includes(Scope.Api)) {
      throw new OAuthException('invalid_scope', `A requested scope must include '${Scope.Api}'.`);
    }
    const unknown = asked.filter((s) => !isScope(s));
    if (unknown.length > 0) throw new OAuthException('invalid_scope', `Unknown scope: ${unknown.join(' ')}.`);
    const refused = asked.filter((s) => !credential.scopes.has(s));
    if (refused.length > 0) throw new OAuthException('invalid_scope', `Scope not assigned to this client: ${refused.join(' ')}.`);
    return asked;
  }

  private async sign(clientId: string, scopes: string[]): Promise<string> {
    const key = await this.keyring.signingKey();
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ client_id: clientId, scope: scopes.join(' ') })
      .setProtectedHeader({ alg: SIGNING_ALG, typ: TOKEN_TYPE, kid: key.kid })
      .setIssuer(this.config.baseUrl)
      .setAudience(TOKEN_AUDIENCE)
      .setSubject(clientId)
      .setIssuedAt(now)
      .setExpirationTime(now + TOKEN_LIFETIME_SECONDS)
      .setJti(randomUUID())
      .sign(key.privateKey);
  }
}
