import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { AppConfig } from '../config/app-config.js';

/** The claims of an access token the service reads once its signature is verified. */
export interface AccessTokenClaims {
  client_id?: unknown;
  scope?: unknown;
  /** Expiry, seconds since the epoch. */
  exp?: unknown;
  /** Issue time, seconds since the epoch. */
  iat?: unknown;
}

/** Tokens remembered at once: a few MB at most (a token and its claims are well under 1 KB). */
const MAX_TOKENS = 10_000;

/**
 * Access tokens whose signature, issuer, audience and expiry were verified, with their
 * claims: a partner sends the same token on every request for an hour, and checking its
 * ES256 signature each time was the largest single cost of a cached page. A token is kept
 * until it expires but at most AUTH_CACHE_SECONDS, the time in which every other auth
 * decision (a retired signing key, a revoked API key, a disabled credential) reaches every
 * replica anyway; what depends on the request (the API key's credential, the credential
 * being enabled) is still checked on every request.
 */
@Injectable()
export class VerifiedTokens {
  private readonly tokens = new LRUCache<string, AccessTokenClaims>({ max: MAX_TOKENS });
  private readonly keepMs: number;

  constructor(config: AppConfig) {
    this.keepMs = config.AUTH_CACHE_SECONDS * 1000;
  }

  /** The claims of a token verified before and not yet expired; undefined otherwise. */
  claimsOf(token: string): AccessTokenClaims | undefined {
    return this.tokens.get(token);
  }

  /** Remembers a token that has just been verified. */
  remember(token: string, claims: AccessTokenClaims): void {
    if (this.keepMs <= 0 || typeof claims.exp !== 'number') return;
    const ttl = Math.min(this.keepMs, claims.exp * 1000 - Date.now());
    if (ttl > 0) this.tokens.set(token, claims, { ttl });
  }
}
