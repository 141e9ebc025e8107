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

/**
 * What the remembered tokens may hold, counted by their length and a fixed allowance for their
 * claims: the tokens this service issues are well under 1 KB (some 8,000 of them), and a token
 * as long as the request head allows counts for what it holds.
 */
const MAX_BYTES = 8 * 1024 * 1024;

/** What a token's claims (four small fields) and its entry are counted as, beside its length. */
const ENTRY_BYTES = 256;

/**
 * Access tokens whose signature, issuer, audience and expiry were verified, with their
 * claims: a partner sends the same token on every request for an hour, and checking its
 * ES256 signature each time was the largest single cost of a cached page. A token is kept
 * until it expires but at most AUTH_CACHE_SECONDS, the time in which every other auth
 * decision (a retired signing key, a revoked API key, a disabled credential) reaches every
 * replica anyway, and no longer than the signing keys it was verified with may be relied on
 * (AUTH_CACHE_SECONDS after they were read: a key retired by another process then stops its
 * tokens within that time, not up to twice it); what depends on the request (the API key's credential, the credential
 * being enabled) is still checked on every request.
 */
@Injectable()
export class VerifiedTokens {
  private readonly tokens = new LRUCache<string, AccessTokenClaims>({ maxSize: MAX_BYTES, sizeCalculation: (_claims, token) => token.length + ENTRY_BYTES });
  private readonly keepMs: number;

  constructor(config: AppConfig) {
    this.keepMs = config.AUTH_CACHE_SECONDS * 1000;
  }

  /** The claims of a token verified before and not yet expired; undefined otherwise. */
  claimsOf(token: string): AccessTokenClaims | undefined {
    return this.tokens.get(token);
  }

  /**
   * Remembers a token that has just been verified, at most until `trustedUntil` (ms on
   * performance.now()'s clock): when the signing keys it was verified with are read again.
   */
  remember(token: string, claims: AccessTokenClaims, trustedUntil = Infinity): void {
    if (this.keepMs <= 0 || typeof claims.exp !== 'number') return;
    const ttl = Math.min(this.keepMs, claims.exp * 1000 - Date.now(), trustedUntil - performance.now());
    if (ttl > 0) this.tokens.set(token, claims, { ttl });
  }

  /** The tokens remembered, those past their time but not yet dropped included. */
  get size(): number {
    return this.tokens.size;
  }

  /**
   * Drops the tokens past their time. Called when the process goes quiet (the idle collector):
   * an expired entry is otherwise dropped only when read or pushed out by new ones, and after a
   * load the cache held its 8 MB of dead tokens (some 9,400) for as long as the process ran.
   */
  purgeStale(): void {
    this.tokens.purgeStale();
  }
}
