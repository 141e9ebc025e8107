import { Reflector } from '@nestjs/core';
import type { ThrottlerModuleOptions } from '@nestjs/throttler';
import type { Request } from 'express';
import { DataSource } from 'typeorm';
import { guardCall, refusalOf } from '../../test/helpers/guard-context.js';
import { OAuthException } from '../common/oauth-error.js';
import { ProblemException } from '../common/problem.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { apiKeyTracker, clientIdTracker, isTokenRequest, RateLimitGuard } from './rate-limit.guard.js';
import { RateLimitStorage } from './rate-limit.storage.js';

/** The limits as RateLimitModule configures them, with small numbers: 3 a minute per key, 1 per client id. */
const OPTIONS: ThrottlerModuleOptions = {
  setHeaders: false,
  throttlers: [
    { name: 'default', ttl: 60_000, limit: 3, getTracker: (req) => apiKeyTracker(req as unknown as Request) },
    {
      name: 'token',
      ttl: 60_000,
      limit: 1,
      getTracker: (req) => clientIdTracker(req as unknown as Request),
      skipIf: (context) => !isTokenRequest(context.switchToHttp().getRequest<Request>()),
    },
  ],
};

/** A number of seconds left in a one-minute window. */
const secondsLeft = (text: string | undefined): boolean => /^\d+$/.test(text ?? '') && Number(text) >= 1 && Number(text) <= 60;

describe('RateLimitGuard counting in the process (no Redis)', () => {
  // The metrics' database gauges are only read when scraped; this source is never opened.
  const metrics = new MetricsService(new DataSource({ type: 'better-sqlite3', database: ':memory:' }));
  let guard: RateLimitGuard;

  beforeEach(async () => {
    guard = new RateLimitGuard(OPTIONS, new RateLimitStorage(null, 'results:', metrics), new Reflector(), metrics);
    await guard.onModuleInit();
  });

  const byKey = (key: string) => guardCall('branches', { headers: { 'svc-api-key': key } });
  const tokenRequest = (clientId: string) =>
    guardCall('open', { path: '/connect/token', headers: { 'svc-api-key': 'svck_key' }, body: { client_id: clientId } });

  it('describes the per-key limit on every answer and refuses the request past it with a 429 problem', async () => {
    for (let remaining = 2; remaining >= 0; remaining--) {
      const http = byKey('svck_one');
      expect(await guard.canActivate(http.context)).toBe(true);
      expect(http.response.header('RateLimit-Policy')).toBe('"default";q=3;w=60');
      const [, r, t] = /^"default";r=(\d+);t=(\d+)$/.exec(http.response.header('RateLimit') ?? '') ?? [];
      expect(Number(r)).toBe(remaining);
      expect(secondsLeft(t)).toBe(true);
      expect(http.response.header('X-Rate-Limit-Limit')).toBe('3');
      expect(http.response.header('X-Rate-Limit-Remaining')).toBe(String(remaining));
      const reset = Date.parse(http.response.header('X-Rate-Limit-Reset') ?? '');
      expect(reset > Date.now() - 1000 && reset <= Date.now() + 60_000).toBe(true);
    }
    const refused = byKey('svck_one');
    const error = await refusalOf(() => guard.canActivate(refused.context));
    expect(error).toBeInstanceOf(ProblemException);
    const problem = error as ProblemException;
    expect(problem.getStatus()).toBe(429);
    expect(problem.detail).toBe(`The rate limit of 3 requests a minute is reached; retry after ${problem.headers['Retry-After']} seconds.`);
    expect(secondsLeft(problem.headers['Retry-After'])).toBe(true);
    expect(refused.response.header('RateLimit')).toMatch(/^"default";r=0;t=/);
    // Another key has its own window.
    expect(await guard.canActivate(byKey('svck_two').context)).toBe(true);
  });

  it('limits the token endpoint per client id too, refusing with the OAuth slow_down error, and describes the tighter limit', async () => {
    const first = tokenRequest('svc_a');
    expect(await guard.canActivate(first.context)).toBe(true);
    expect(first.response.header('RateLimit-Policy')).toBe('"default";q=3;w=60, "token";q=1;w=60');
    expect(first.response.header('X-Rate-Limit-Limit')).toBe('1');
    expect(first.response.header('X-Rate-Limit-Remaining')).toBe('0');

    const error = await refusalOf(() => guard.canActivate(tokenRequest('svc_a').context));
    expect(error).toBeInstanceOf(OAuthException);
    const oauth = error as OAuthException;
    expect(oauth.getStatus()).toBe(429);
    expect(oauth.error).toBe('slow_down');
    expect(secondsLeft(oauth.headers['Retry-After'])).toBe(true);
    // Another client id (with the same API key, which has requests left) is not refused.
    expect(await guard.canActivate(tokenRequest('svc_b').context)).toBe(true);
  });
});
