import type { AppConfig } from '../config/app-config.js';
import { VerifiedTokens } from './verified-tokens.js';

const tokens = (seconds: number) => new VerifiedTokens({ AUTH_CACHE_SECONDS: seconds } as AppConfig);
const inSeconds = (s: number) => Math.floor(Date.now() / 1000) + s;

describe('VerifiedTokens', () => {
  it('gives back the claims of a token remembered and not expired', () => {
    const cache = tokens(10);
    const claims = { client_id: 'svc_1', scope: 'svc-results-api', exp: inSeconds(3600) };
    cache.remember('a.b.c', claims);
    expect(cache.claimsOf('a.b.c')).toBe(claims);
    expect(cache.claimsOf('a.b.d')).toBeUndefined();
  });

  it('never remembers an expired token, one without an expiry, or any when the cache time is 0', () => {
    const cache = tokens(10);
    cache.remember('expired', { client_id: 'svc_1', exp: inSeconds(-1) });
    cache.remember('no-exp', { client_id: 'svc_1' });
    expect(cache.claimsOf('expired')).toBeUndefined();
    expect(cache.claimsOf('no-exp')).toBeUndefined();
    const off = tokens(0);
    off.remember('a.b.c', { client_id: 'svc_1', exp: inSeconds(3600) });
    expect(off.claimsOf('a.b.c')).toBeUndefined();
  });

  it('drops the tokens past their time when asked, and keeps the others', async () => {
    const cache = tokens(30);
    const claims = { client_id: 'svc_1', exp: inSeconds(3600) };
    for (let i = 0; i < 50; i++) cache.remember(`short-${i}`, claims, performance.now() + 30);
    cache.remember('long', claims);
    await new Promise((r) => setTimeout(r, 80));
    // Past their time, still held until read or dropped.
    expect(cache.size).toBe(51);
    cache.purgeStale();
    expect(cache.size).toBe(1);
    expect(cache.claimsOf('long')).toBe(claims);
  });

  it('forgets a token when the signing keys it was verified with are to be read again, before the cache time is up', async () => {
    const cache = tokens(30);
    const claims = { client_id: 'svc_1', exp: inSeconds(3600) };
    cache.remember('late', claims, performance.now() + 50);
    cache.remember('past', claims, performance.now() - 1);
    expect(cache.claimsOf('late')).toBe(claims);
    expect(cache.claimsOf('past')).toBeUndefined();
    await new Promise((r) => setTimeout(r, 120));
    expect(cache.claimsOf('late')).toBeUndefined();
  });

  it('forgets a token when it expires, before the cache time is up', async () => {
    const cache = tokens(30);
    cache.remember('soon', { client_id: 'svc_1', exp: Date.now() / 1000 + 0.05 });
    expect(cache.claimsOf('soon')).toBeDefined();
    await new Promise((r) => setTimeout(r, 120));
    expect(cache.claimsOf('soon')).toBeUndefined();
  });

  it('holds at most 8 MB of tokens, counted by their length: the least recently used go first', () => {
    const cache = tokens(30);
    const claims = { client_id: 'svc_1', exp: inSeconds(3600) };
    // 2,000 tokens of 6 KB are 12 MB: the first ones make room for the last.
    const long = (i: number): string => `${String(i).padStart(6, '0')}.${'x'.repeat(6000)}`;
    for (let i = 0; i < 2000; i++) cache.remember(long(i), claims);
    expect(cache.claimsOf(long(0))).toBeUndefined();
    expect(cache.claimsOf(long(1999))).toBe(claims);
    const kept = Array.from({ length: 2000 }, (_, i) => cache.claimsOf(long(i))).filter(Boolean).length;
    expect(kept).toBe(Math.floor((8 * 1024 * 1024) / (long(0).length + 256)));
  });
});
