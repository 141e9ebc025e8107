import { Injectable, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import {
  InjectThrottlerOptions,
  InjectThrottlerStorage,
  ThrottlerGuard,
  type ThrottlerModuleOptions,
  type ThrottlerRequest,
  type ThrottlerStorage,
} from '@nestjs/throttler';
import type { Request, Response } from 'express';
import { decodeBasic } from '../common/basic-credentials.js';
import { OAuthException } from '../common/oauth-error.js';
import { ProblemException } from '../common/problem.js';
import { storeKeyDigest as digest } from '../common/store-key.js';
import { MetricsService } from '../metrics/metrics.service.js';
import type { CountResult } from './rate-limit.storage.js';

export const TOKEN_PATH = '/connect/token';

export const isTokenRequest = (req: Request): boolean => req.path === TOKEN_PATH;

/** Per API key (the key itself never reaches the store, only a digest); by address without one. */
export function apiKeyTracker(req: Request): string {
  const key = req.headers['svc-api-key'];
  return typeof key === 'string' && key.trim() ? `key:${digest(key.trim())}` : `ip:${req.ip ?? 'unknown'}`;
}

/** The token endpoint's client id, from the form or the Basic credentials. */
export function clientIdTracker(req: Request): string {
  const body = req.body as Record<string, unknown> | undefined;
  if (typeof body?.client_id === 'string' && body.client_id) return `client:${digest(body.client_id)}`;
  const basic = decodeBasic(req.headers.authorization);
  return basic ? `client:${digest(basic.clientId)}` : apiKeyTracker(req);
}

interface LimitState {
  limit: number;
  remaining: number;
  /** Epoch ms at which the limit's window (or block) ends. */
  resetAt: number;
}

const LEGACY_STATE = 'rateLimitLegacyHeaders';

/**
 * The widely parsed `X-Rate-Limit-Limit`, `-Remaining` and `-Reset` (an ISO 8601 UTC
 * date-time) hold one value each, so they describe the limit closest to refusing: the one
 * with the fewest requests remaining (on a tie, the one that resets later). On the token
 * endpoint that is often its own per-client limit rather than the per-key one.
 */
function setLegacyHeaders(res: Response, state: LimitState): void {
  const locals = res.locals as Record<string, LimitState | undefined>;
  const shown = locals[LEGACY_STATE];
  if (shown && (shown.remaining < state.remaining || (shown.remaining === state.remaining && shown.resetAt >= state.resetAt))) return;
  locals[LEGACY_STATE] = state;
  res.setHeader('X-Rate-Limit-Limit', String(state.limit));
  res.setHeader('X-Rate-Limit-Remaining', String(state.remaining));
  res.setHeader('X-Rate-Limit-Reset', new Date(state.resetAt).toISOString());
}

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
  ) {
    super(options, storage, reflector);
  }

  protected override async handleRequest(props: ThrottlerRequest): Promise<boolean> {
    const { context, limit, ttl, throttler, blockDuration, getTracker, generateKey } = props;
    const req = context.switchToHttp().getRequest<Request>();
    const res = context.switchToHttp().getResponse<Response>();
    const name = throttler.name ?? 'default';
    const key = generateKey(context, await getTracker(req, context), name);
    const count = (await this.storageService.increment(key, ttl, limit, blockDuration, name)) as CountResult;
    const reset = count.isBlocked ? count.timeToBlockExpire : count.timeToExpire;
    const remaining = Math.max(0, limit - count.totalHits);
    res.append('RateLimit-Policy', `"${name}";q=${limit};w=${Math.round(ttl / 1000)}`);
    res.append('RateLimit', `"${name}";r=${remaining};t=${reset}`);
    setLegacyHeaders(res, { limit, remaining, resetAt: count.resetAt });
    if (!count.isBlocked) return true;

    this.metrics.rateLimited.inc({ limit: name });
    const retryAfter = String(Math.max(1, count.timeToBlockExpire));
    if (isTokenRequest(req)) {
      this.metrics.tokenFailures.inc({ error: 'slow_down' });
      throw new OAuthException('slow_down', `Too many token requests for this client; retry after ${retryAfter} seconds.`, 429, {
        'Retry-After': retryAfter,
      });
    }
    throw new ProblemException(429, `The rate limit of ${limit} requests a minute is reached; retry after ${retryAfter} seconds.`, {
      headers: { 'Retry-After': retryAfter },
    });
  }

  /** One bucket per tracker for the whole API, not one per route. */
  protected override generateKey(_context: ExecutionContext, tracker: string, name: string): string {
    return `${name}:${tracker}`;
  }
}
