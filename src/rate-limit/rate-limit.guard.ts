import { Inject, Injectable, Optional, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerModuleOptions,
  type ThrottlerRequest,
  type ThrottlerStorage,
  normalizeIp,
} from '@nestjs/throttler';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isIP } from 'node:net';
import type { Request, Response } from 'express';
import type { AppConfig } from '../config/app-config.js';
import { countOf } from '../common/clock.js';
import { OAuthException } from '../common/oauth-error.js';
import { ProblemException } from '../common/problem.js';
import { storeKeyDigest as digest } from '../common/store-key.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { CountResult } from './rate-limit.storage.js';

export const TOKEN_PATH = '/connect/token';

/**
 * A request the token route answers, as Express routed it (its path in any case, with or
 * without a trailing slash: `/CONNECT/TOKEN/` is the token route too, and counts as such).
 */
export const isTokenRequest = (req: Request): boolean => (req.route as { path?: unknown } | undefined)?.path === TOKEN_PATH;

/** What a tracker reads of a request: an Express request, or a plain one before Express (no address, no body). */
export interface TrackedRequest {
  headers: IncomingMessage['headers'];
  ip?: string | undefined;
  socket?: { remoteAddress?: string | undefined } | undefined;
  body?: unknown;
}

/** The IPv6 prefix counted as one address: a /64 is what one subscriber is given, and can pick any address in it. */
const IPV6_PREFIX = 64;

/**
 * The store's name for the request's client address. Behind TRUST_PROXY, Express takes
 * whatever X-Forwarded-For says for the address without checking that it is one (up to the
 * 16 KiB of the headers): a value that is not an IP address is not used, the connection's
 * own address is (a request whose proxy chain sends such a value is still served; the client
 * without a proxy that forged it counts as itself). IPv6 addresses count by their /64, IPv4
 * ones written as IPv6 as IPv4; the address then goes through the same fixed-length digest
 * as keys, so that no caller-supplied text grows the store's keys.
 */
export function addressTracker(req: TrackedRequest): string {
  const forwarded = req.ip;
  const address = forwarded !== undefined && isIP(forwarded) !== 0 ? forwarded : req.socket?.remoteAddress;
  return `ip:${address !== undefined && isIP(address) !== 0 ? digest(normalizeIp(address, IPV6_PREFIX)) : 'unknown'}`;
}

/**
 * Whose a presented API key is: the id of the credential it belongs to when it is a live key
 * (known, not revoked), null when it is not one (see AuthCacheService.keyOwner).
 */
export type KeyOwner = (presented: string) => Promise<string | null>;

/** The KeyOwner the guard counts with, provided by the module that knows the keys (AuthModule). */
export const KEY_OWNER = Symbol('KEY_OWNER');

/**
 * Seconds until a client id locked out by failed token requests may try again (0 when it is
 * not), provided by the module that counts the failures (AuthModule): a 429 of the token
 * endpoint says the later of the two ends, the window's and the lockout's, so that a partner
 * retrying when told is not refused again.
 */
export type TokenLockout = (clientId: string) => Promise<number>;

/** The TokenLockout the guard asks when it refuses a token request (optional: without one, the window's end is said). */
export const TOKEN_LOCKOUT = Symbol('TOKEN_LOCKOUT');

/** The API key a request presents, trimmed; undefined without one. */
function presentedKey(req: TrackedRequest): string | undefined {
  const key = req.headers['svc-api-key'];
  return typeof key === 'string' && key.trim() ? key.trim() : undefined;
}

/**
 * Whose the request's key is: the owner's client id, null when it carries none or one that
 * is not live, undefined when that cannot be told now (the credentials cannot be read: the
 * request then fails after its count, with the limit's headers, as any other does).
 */
async function ownerOfKey(key: string | undefined, owner: KeyOwner): Promise<string | null | undefined> {
  if (key === undefined) return null;
  try {
    return await owner(key);
  } catch {
    return undefined;
  }
}

/**
 * Per live API key (the key itself never reaches the store, only a digest); by address
 * without one. A key that is not live counts by address too, so that a caller cannot open a
 * window of its own with every made-up key it sends. A key that cannot be judged now counts
 * as the key it is.
 */
export async function apiKeyTracker(req: TrackedRequest, owner: KeyOwner): Promise<string> {
  const key = presentedKey(req);
  return key !== undefined && (await ownerOfKey(key, owner)) !== null ? `key:${digest(key)}` : addressTracker(req);
}

/**
 * The token endpoint's: per client id, the one whose live key the request carries, whatever
 * client id its form names, so that nobody without a client's key can use up that client's
 * window; by address without a live key (or when the key cannot be judged now).
 */
export async function clientIdTracker(req: TrackedRequest, owner: KeyOwner): Promise<string> {
  const clientId = await ownerOfKey(presentedKey(req), owner);
  return typeof clientId === 'string' ? `client:${digest(clientId)}` : addressTracker(req);
}

interface LimitState {
  limit: number;
  remaining: number;
  /** Epoch ms at which the limit's window (or block) ends. */
  resetAt: number;
}

/** The limit the X-Rate-Limit-* headers of a response describe so far. */
const legacyShown = new WeakMap<object, LimitState>();

/**
 * The widely parsed `X-Rate-Limit-Limit`, `-Remaining` and `-Reset` (an ISO 8601 UTC
 * date-time) hold one value each, so they describe the limit closest to refusing: the one
 * with the fewest requests remaining (on a tie, the one that resets later). On the token
 * endpoint that is often its own per-client limit rather than the per-key one.
 */
function setLegacyHeaders(res: ServerResponse, state: LimitState): void {
  const shown = legacyShown.get(res);
  if (shown && (shown.remaining < state.remaining || (shown.remaining === state.remaining && shown.resetAt >= state.resetAt))) return;
  legacyShown.set(res, state);
  res.setHeader('X-Rate-Limit-Limit', String(state.limit));
  res.setHeader('X-Rate-Limit-Remaining', String(state.remaining));
  res.setHeader('X-Rate-Limit-Reset', new Date(state.resetAt).toISOString());
}

/** A named limit: `limit` requests per fixed window of `ttl` ms of each tracker (what it counts by), refused to the window's end once past it. */
export interface NamedLimit {
  name: string;
  limit: number;
  ttl: number;
  tracker: (req: TrackedRequest, owner: KeyOwner) => Promise<string>;
}

const MINUTE_MS = 60_000;

/** The limit per API key over the whole API (docs/interface.md, "Rate limits"). */
export const apiLimit = (config: Pick<AppConfig, 'RATE_LIMIT_PER_MINUTE'>): NamedLimit => ({
  name: 'default',
  ttl: MINUTE_MS,
  limit: config.RATE_LIMIT_PER_MINUTE,
  tracker: apiKeyTracker,
});

/** The limit per client id on the token endpoint. */
export const tokenLimit = (config: Pick<AppConfig, 'TOKEN_RATE_LIMIT_PER_MINUTE'>): NamedLimit => ({
  name: 'token',
  ttl: MINUTE_MS,
  limit: config.TOKEN_RATE_LIMIT_PER_MINUTE,
  tracker: clientIdTracker,
});

/** The headers that describe one limit's count on a response (see RateLimitGuard). */
export function setLimitHeaders(res: ServerResponse, { name, limit, ttl }: Omit<NamedLimit, 'tracker'>, count: CountResult): void {
  const reset = count.isBlocked ? count.timeToBlockExpire : count.timeToExpire;
  const remaining = Math.max(0, limit - count.totalHits);
  res.appendHeader('RateLimit-Policy', `"${name}";q=${limit};w=${Math.round(ttl / 1000)}`);
  res.appendHeader('RateLimit', `"${name}";r=${remaining};t=${reset}`);
  setLegacyHeaders(res, { limit, remaining, resetAt: count.resetAt });
}

/** The key of a tracker's count under a named limit: one bucket per tracker for the whole API, not one per route. */
const countKey = (name: string, tracker: string): string => `${name}:${tracker}`;

/** Counts made before the guard ran, by a caller that then handed the request on to it (see handOnCount). */
const countedAhead = new WeakMap<IncomingMessage, Map<string, CountResult>>();

/**
 * Counts a request under `limit` ahead of the guard, for a caller that answers some
 * requests itself (the visit pages lane). Set the limit's headers with setLimitHeaders when
 * it answers; when it hands the request on to the guard instead, handOnCount.
 */
export async function countAhead(storage: ThrottlerStorage, req: IncomingMessage, limit: NamedLimit, owner: KeyOwner): Promise<CountResult> {
  const tracker = await limit.tracker(req, owner);
  return (await storage.increment(countKey(limit.name, tracker), limit.ttl, limit.limit, limit.ttl, limit.name)) as CountResult;
}

/** The guard takes this count for the request (its headers, its refusal when blocked) instead of counting it again. */
export function handOnCount(req: IncomingMessage, limit: NamedLimit, count: CountResult): void {
  const counts = countedAhead.get(req);
  if (counts === undefined) countedAhead.set(req, new Map([[limit.name, count]]));
  else counts.set(limit.name, count);
}

/** A request's first refusal by a limit, thrown once every limit has counted it. */
const refusals = new WeakMap<object, Error>();

/**
 * The first global guard, so failed requests count too. Fixed windows per API key over the
 * whole API ("default") and per client id on the token endpoint ("token"). Every response
 * carries the IETF RateLimit-Policy and RateLimit headers, and the X-Rate-Limit-* ones many
 * clients already parse; a refused request is a 429 with
 * Retry-After (problem+json, or the OAuth error body on the token endpoint).
 */
@Injectable()
export class RateLimitGuard extends ThrottlerGuard {
  constructor(
    @InjectThrottlerOptions() options: ThrottlerModuleOptions,
    @InjectThrottlerStorage() storage: ThrottlerStorage,
    reflector: Reflector,
    private readonly metrics: MetricsService,
    @Inject(KEY_OWNER) private readonly owner: KeyOwner,
    @Optional() @Inject(TOKEN_LOCKOUT) private readonly lockout?: TokenLockout,
  ) {
    super(options, storage, reflector);
  }

  protected override async handleRequest(props: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, blockDuration, generateKey } = props;
    const req = context.switchToHttp().getRequest<Request>();
    const res = context.switchToHttp().getResponse<Response>();
    const name = throttler.name ?? 'default';
    const ahead = countedAhead.get(req)?.get(name);
    // The limits are NamedLimits (RateLimitModule): their trackers ask who owns the request's key.
    const tracker = (throttler as Partial<NamedLimit>).tracker;
    if (tracker === undefined) throw new Error(`the limit ${name} has no tracker`);
    const count =
      ahead ??
      ((await this.storageService.increment(generateKey(context, await tracker(req, this.owner), name), ttl, limit, blockDuration, name)) as CountResult);
    setLimitHeaders(res, { name, limit, ttl }, count);
    if (!count.isBlocked) return true;

    // The first limit refused is the answer, once every limit that applies has counted the
    // request and set its headers (a 429 of the token endpoint names its "token" limit too).
    if (refusals.has(req)) return true;
    this.metrics.rateLimited.inc({ limit: name });
    let retryAfter = String(Math.max(1, count.timeToBlockExpire));
    if (isTokenRequest(req)) {
      this.metrics.tokenFailures.inc({ error: 'slow_down' });
      // Which limit refused: the client's own on token requests, or its API key's on every request.
      let which = name === 'token' ? 'Too many token requests for this client' : `The API key's rate limit of ${countOf(limit, 'request')} a minute, token requests included, is reached`;
      // A lockout that ends later is the wait to say: asked for the key's own client only, whose
      // holder the token endpoint would tell of it anyway once the window is over.
      const locked = await this.lockedFor(req);
      if (locked > Number(retryAfter)) {
        retryAfter = String(locked);
        which = 'Too many failed token requests for this client';
      }
      refusals.set(req, new OAuthException('slow_down', `${which}; retry after ${countOf(retryAfter, 'second')}.`, 429, { 'Retry-After': retryAfter }));
    } else {
      refusals.set(
        req,
        new ProblemException(429, `The rate limit of ${countOf(limit, 'request')} a minute is reached; retry after ${countOf(retryAfter, 'second')}.`, {
          headers: { 'Retry-After': retryAfter },
        }),
      );
    }
    return true;
  }

  /** Seconds the lockout of the client whose live key the request presents lasts; 0 when none, or when that cannot be told now. */
  private async lockedFor(req: TrackedRequest): Promise<number> {
    if (this.lockout === undefined) return 0;
    const clientId = await ownerOfKey(presentedKey(req), this.owner);
    if (typeof clientId !== 'string') return 0;
    try {
      return await this.lockout(clientId);
    } catch {
      return 0;
    }
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    const allowed = await super.canActivate(context);
    const req = context.switchToHttp().getRequest<Request>();
    const refusal = refusals.get(req);
    if (refusal !== undefined) {
      refusals.delete(req);
      throw refusal;
    }
    return allowed;
  }

  /** One bucket per tracker for the whole API, not one per route. */
  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    return countKey(name, tracker);
  }
}
