import type { KeyObject } from 'node:crypto';
import { Injectable, Logger } from '@nestjs/common';
import { PassportStrategy } from '@nestjs/passport';
import { decodeProtectedHeader } from 'jose';
import { Strategy } from 'passport-jwt';
import { AppConfig } from '../../config/app-config.js';
import { AuthCacheService } from '../auth-cache.service.js';
import { KeyringService, SIGNING_ALG } from '../keyring.service.js';
import type { AuthenticatedRequest, Principal } from '../principal.js';
import { TOKEN_AUDIENCE, TOKEN_LIFETIME_SECONDS, TOKEN_TYPE } from '../token.service.js';
import { VerifiedTokens, type AccessTokenClaims } from '../verified-tokens.js';
import { bearerCredentials, hasCanonicalSignature, isCompactJws } from './bearer-token.js';

type KeyCallback = (err: unknown, key?: string | Buffer) => void;

/**
 * jsonwebtoken, which passport-jwt verifies with, takes a KeyObject as it is (a PEM would be
 * parsed again on every request); the passport-jwt typings only list string and Buffer.
 */
const passKeyObject = (done: KeyCallback, key: KeyObject): void => (done as unknown as (err: null, key: KeyObject) => void)(null, key);

/** Per request being verified: until when (ms on performance.now()'s clock) the signing keys its token was checked against may be relied on. */
const keysTrustedUntil = new WeakMap<object, number>();

/** How far ahead of this replica's clock another replica's may be when it issues a token. */
const CLOCK_SKEW_SECONDS = 60;

/** Why a bearer token was refused; the guard turns it into a 401 with RFC 6750 headers. */
export class TokenRejected extends Error {}

/** The signing keys could not be read (their database failing): a fault of the service, not of the token. */
export class KeyringUnavailable extends Error {
  constructor(cause: unknown) {
    super('the signing keys could not be read', { cause });
  }
}

/** The key id of a token that may be one of ours; TokenRejected (or whatever the decoder throws) otherwise. */
function signingKeyId(rawJwt: string): string {
  if (!isCompactJws(rawJwt)) throw new TokenRejected('The access token is malformed.');
  const header = decodeProtectedHeader(rawJwt);
  if (header.alg !== SIGNING_ALG) throw new TokenRejected('The access token is not signed with ES256.');
  const typ = typeof header.typ === 'string' ? header.typ.toLowerCase() : undefined;
  if (typ !== TOKEN_TYPE && typ !== `application/${TOKEN_TYPE}`) throw new TokenRejected('The access token is not an at+jwt access token.');
  if (typeof header.kid !== 'string' || !header.kid) throw new TokenRejected('The access token names no signing key.');
  // RFC 7515 §4.1.11: a token whose header names extensions the recipient must understand is
  // invalid where they are not understood; this service understands none (nor RFC 7797's b64).
  if (header.crit !== undefined) throw new TokenRejected('The access token names header parameters this service does not understand (crit).');
  if (!hasCanonicalSignature(rawJwt)) throw new TokenRejected('The access token is malformed.');
  return header.kid;
}

/**
 * passport-jwt verification of RFC 9068 access tokens: ES256 only, `typ: at+jwt`, a `kid`
 * of the keyring, this issuer and audience, not expired. Then the token must belong to the
 * credential of the request's API key, and that credential must not be disabled.
 */
@Injectable()
export class JwtStrategy extends PassportStrategy(Strategy, 'jwt') {
  private readonly logger = new Logger('Auth');
  /** When a token issued ahead was last logged (performance.now()); none yet. */
  private clockAheadLoggedAt = -Infinity;

  constructor(
    private readonly cache: AuthCacheService,
    private readonly verified: VerifiedTokens,
    keyring: KeyringService,
    config: AppConfig,
  ) {
    super({
      jwtFromRequest: bearerCredentials,
      passReqToCallback: true,
      algorithms: [SIGNING_ALG],
      issuer: config.baseUrl,
      audience: TOKEN_AUDIENCE,
      secretOrKeyProvider: (req: AuthenticatedRequest, rawJwt: string, done: KeyCallback) => {
        let kid: string;
        try {
          kid = signingKeyId(rawJwt);
        } catch (error) {
          // jose's header decoder throws plain TypeErrors; whatever reading the untrusted token throws is the token's fault.
          return done(error instanceof TokenRejected ? error : new TokenRejected('The access token is malformed.'));
        }
        keyring.verification(kid).then(
          ({ key, trustedUntil }) => {
            if (!key) return done(new TokenRejected('The access token is signed by an unknown key.'));
            // validate() remembers the token no longer than the ring it was verified with may stand.
            keysTrustedUntil.set(req, trustedUntil);
            passKeyObject(done, key.publicKey);
          },
          (error: unknown) => done(new KeyringUnavailable(error)),
        );
      },
    });
  }

  /** Called by passport-jwt once the token verified: its claims are remembered for the requests that follow. */
  async validate(request: AuthenticatedRequest, claims: AccessTokenClaims): Promise<Principal> {
    // Ours all expire an hour after they are issued: one that never expires, or later, was not made by the token endpoint.
    const { exp, iat } = claims;
    if (typeof exp !== 'number' || typeof iat !== 'number' || exp - iat > TOKEN_LIFETIME_SECONDS) {
      throw new TokenRejected('The access token has no lifetime the token endpoint gives.');
    }
    const ahead = Math.ceil(iat - Date.now() / 1000);
    if (ahead > CLOCK_SKEW_SECONDS) {
      // Well signed by a key of the ring, so most likely issued by a replica whose clock is ahead
      // of this one's: said as such, to the partner and (at most once a minute) in the log.
      this.noteClockAhead(ahead);
      throw new TokenRejected(`The access token was issued ${ahead} s ahead of this server's clock, more than the ${CLOCK_SKEW_SECONDS} s that servers' clocks may differ by.`);
    }
    const principal = await this.principalOf(request, claims);
    const token = bearerCredentials(request);
    if (token !== null) this.verified.remember(token, claims, keysTrustedUntil.get(request) ?? performance.now());
    return principal;
  }

  /** Logs a token issued ahead of this process's clock, at most once a minute (on the monotonic clock). */
  private noteClockAhead(seconds: number): void {
    const now = performance.now();
    if (now < this.clockAheadLoggedAt + 60_000) return;
    this.clockAheadLoggedAt = now;
    this.logger.warn(`a token was refused as issued ${seconds} s ahead of this replica's clock: the clocks of the replicas (or of this one) are off`);
  }

  /** The caller, from a verified token's claims and the request's API key. */
  async principalOf(request: Pick<AuthenticatedRequest, 'apiKey'>, claims: AccessTokenClaims): Promise<Principal> {
    const clientId = typeof claims.client_id === 'string' ? claims.client_id : '';
    if (!request.apiKey || clientId !== request.apiKey.credentialId) {
      throw new TokenRejected('The access token was issued to another client than the svc-api-key belongs to.');
    }
    const credential = await this.cache.credential(clientId);
    if (!credential || credential.disabled) throw new TokenRejected('The client of this access token is disabled.');
    return {
      clientId,
      keyPrefix: request.apiKey.keyPrefix,
      // The token's scopes that the credential still holds: one taken from it since stops working with the cache's refresh.
      scopes: new Set(typeof claims.scope === 'string' ? claims.scope.split(' ').filter((s) => s !== '' && credential.scopes.has(s)) : []),
      clients: credential.clients,
      brands: credential.brands,
      visitTypes: credential.visitTypes,
      selectableBrands: credential.selectableBrands,
      selectableVisitTypes: credential.selectableVisitTypes,
    };
  }
}
