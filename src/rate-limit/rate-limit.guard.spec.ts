import { Reflector } from '@nestjs/core';
import type { ThrottlerModuleOptions, ThrottlerOptions } from '@nestjs/throttler';
import type { Request } from 'express';
import { DataSource } from 'typeorm';
import { guardCall, refusalOf } from '../../test/helpers/guard-context.js';
import { countOf } from '../common/clock.js';
import { OAuthException } from '../common/oauth-error.js';
import { ProblemException } from '../common/problem.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { RedisGate } from '../redis/redis-gate.js';
import { addressTracker, apiKeyTracker, clientIdTracker, isTokenRequest, RateLimitGuard, type KeyOwner } from './rate-limit.guard.js';
import { RateLimitStorage } from './rate-limit.storage.js';

/** The live keys, by the client id they belong to; any other value is not a key. */
const KEYS: Record<string, string> = { svck_one: 'svc_one', svck_two: 'svc_two', svck_a: 'svc_a', svck_b: 'svc_b' };
const owner: KeyOwner = (presented) => Promise.resolve(KEYS[presented] ?? null);

/** The limits as RateLimitModule configures them, with small numbers: 3 a minute per key, 1 per client id. */
const OPTIONS: ThrottlerModuleOptions = {
  setHeaders: false,
  throttlers: [
    { name: 'default', ttl: 60_000, limit: 3, tracker: apiKeyTracker } as ThrottlerOptions,
    {
      name: 'token',
      ttl: 60_000,
      limit: 1,
      tracker: clientIdTracker,
      skipIf: (context) => !isTokenRequest(context.switchToHttp().getRequest<Request>()),
    } as ThrottlerOptions,
  ],
};

/** A number of seconds left in a one-minute window. */
const secondsLeft = (text: string | undefined): boolean => /^\d+$/.test(text ?? '') && Number(text) >= 1 && Number(text) <= 60;

describe('RateLimitGuard counting in the process (no Redis)', () => {
  // The metrics' database gauges are only read when scraped; this source is never opened.
  const metrics = new MetricsService(new DataSource({ type: 'better-sqlite3', database: ':memory:' }));
  let guard: RateLimitGuard;

  beforeEach(async () => {
    guard = new RateLimitGuard(OPTIONS, new RateLimitStorage(new RedisGate(null, 5000), 'results:', metrics), new Reflector(), metrics, owner);
    await guard.onModuleInit();
  });

  const byKey = (key: string, ip = '127.0.0.1') => guardCall('branches', { headers: { 'svc-api-key': key }, ip });
  const tokenRequest = (key: string, clientId: string) =>
    guardCall('open', { path: '/connect/token', route: { path: '/connect/token' }, headers: { 'svc-api-key': key }, body: { client_id: clientId } });

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
    const wait = problem.headers['Retry-After'];
    expect(problem.detail).toBe(`The rate limit of 3 requests a minute is reached; retry after ${wait === '1' ? '1 second' : `${wait} seconds`}.`);
    expect(secondsLeft(problem.headers['Retry-After'])).toBe(true);
    expect(refused.response.header('RateLimit')).toMatch(/^"default";r=0;t=/);
    // Another key has its own window.
    expect(await guard.canActivate(byKey('svck_two').context)).toBe(true);
  });

  it('says a limit of 1 and a wait of 1 second in the singular', async () => {
    const one: ThrottlerModuleOptions = { ...OPTIONS, throttlers: [{ ...(OPTIONS as { throttlers: ThrottlerOptions[] }).throttlers[0], limit: 1 }] };
    const single = new RateLimitGuard(one, new RateLimitStorage(new RedisGate(null, 5000), 'results:', metrics), new Reflector(), metrics, owner);
    await single.onModuleInit();
    expect(await single.canActivate(byKey('svck_one').context)).toBe(true);
    const error = (await refusalOf(() => single.canActivate(byKey('svck_one').context))) as ProblemException;
    const wait = error.headers['Retry-After'];
    // 'retry after 1 seconds' and '1 requests' were said before.
    expect(error.detail).toBe(`The rate limit of 1 request a minute is reached; retry after ${wait === '1' ? '1 second' : `${wait} seconds`}.`);
    expect(countOf(1, 'second')).toBe('1 second');
    expect(countOf('1', 'second')).toBe('1 second');
    expect(countOf(42, 'second')).toBe('42 seconds');
    expect(countOf(0, 'request')).toBe('0 requests');
  });

  it('counts keys that are not live by the caller\'s address, so made-up keys share one window', async () => {
    for (let i = 0; i < 3; i++) expect(await guard.canActivate(byKey(`svck_made_up_${i}`, '10.0.0.1').context)).toBe(true);
    const refused = byKey('svck_made_up_3', '10.0.0.1');
    const error = await refusalOf(() => guard.canActivate(refused.context));
    expect(error).toBeInstanceOf(ProblemException);
    expect((error as ProblemException).getStatus()).toBe(429);
    // Another address has its own window, and so has a live key from the same address.
    expect(await guard.canActivate(byKey('svck_made_up_4', '10.0.0.2').context)).toBe(true);
    const live = byKey('svck_one', '10.0.0.1');
    expect(await guard.canActivate(live.context)).toBe(true);
    expect(live.response.header('RateLimit')).toMatch(/^"default";r=2;t=/);
  });

  it('limits the token endpoint per client id too, refusing with the OAuth slow_down error, and describes the tighter limit', async () => {
    const first = tokenRequest('svck_a', 'svc_a');
    expect(await guard.canActivate(first.context)).toBe(true);
    expect(first.response.header('RateLimit-Policy')).toBe('"default";q=3;w=60, "token";q=1;w=60');
    expect(first.response.header('X-Rate-Limit-Limit')).toBe('1');
    expect(first.response.header('X-Rate-Limit-Remaining')).toBe('0');

    const error = await refusalOf(() => guard.canActivate(tokenRequest('svck_a', 'svc_a').context));
    expect(error).toBeInstanceOf(OAuthException);
    const oauth = error as OAuthException;
    expect(oauth.getStatus()).toBe(429);
    expect(oauth.error).toBe('slow_down');
    expect(secondsLeft(oauth.headers['Retry-After'])).toBe(true);
    // Another client's key is not refused.
    expect(await guard.canActivate(tokenRequest('svck_b', 'svc_b').context)).toBe(true);
  });

  it('counts a token request under the client whose live key it carries, not the client id its form names', async () => {
    expect(await guard.canActivate(tokenRequest('svck_a', 'svc_b').context)).toBe(true);
    // svc_a's window is used up, svc_b's is not: a request naming svc_b without its key did not touch it.
    expect(await refusalOf(() => guard.canActivate(tokenRequest('svck_a', 'svc_a').context))).toBeInstanceOf(OAuthException);
    expect(await guard.canActivate(tokenRequest('svck_b', 'svc_b').context)).toBe(true);
    // Without a live key the request counts by address: made-up keys naming svc_b use up that window, not svc_b's.
    const other = tokenRequest('svck_made_up', 'svc_b');
    expect(await guard.canActivate(other.context)).toBe(true);
    expect(other.response.header('RateLimit')).toMatch(/^"default";r=2;t=\d+, "token";r=0;t=\d+$/);
  });
});

describe('addressTracker', () => {
  const tracked = (ip: string | undefined, remoteAddress?: string) => addressTracker({ headers: {}, ip, socket: { remoteAddress } });

  it('names an address by a fixed-length digest, never by the text the client sent', () => {
    expect(tracked('203.0.113.7')).toMatch(/^ip:[A-Za-z0-9_-]{22}$/);
    expect(tracked('203.0.113.7')).not.toBe(tracked('203.0.113.8'));
    // A zone of any length is still an IPv6 address to Node: its length does not reach the key.
    expect(tracked(`fe80::1%${'z'.repeat(8000)}`)).toMatch(/^ip:[A-Za-z0-9_-]{22}$/);
  });

  it("takes the connection's address when the forwarded one is not an address, and says unknown without either", () => {
    expect(tracked('x'.repeat(8000), '198.51.100.1')).toBe(tracked('198.51.100.1'));
    expect(tracked('203.0.113.7, 198.51.100.2', '198.51.100.1')).toBe(tracked('198.51.100.1'));
    expect(tracked(undefined, '198.51.100.1')).toBe(tracked('198.51.100.1'));
    expect(tracked('not an address', 'nor this')).toBe('ip:unknown');
    expect(tracked(undefined)).toBe('ip:unknown');
  });

  it('counts IPv6 addresses by their /64, and IPv4 addresses written as IPv6 as themselves', () => {
    expect(tracked('2001:db8:1:2::1')).toBe(tracked('2001:db8:1:2:ffff:ffff:ffff:ffff'));
    expect(tracked('2001:db8:1:2::1')).not.toBe(tracked('2001:db8:1:3::1'));
    expect(tracked('::ffff:127.0.0.1')).toBe(tracked('127.0.0.1'));
  });
});
