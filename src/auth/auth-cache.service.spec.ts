import { jest } from '@jest/globals';
import type { AppConfig } from '../config/app-config.js';
import { AuthCacheService } from './auth-cache.service.js';
import type { AuthRepository } from './auth.repository.js';
import type { ClientsService } from '../clients/clients.service.js';

/** A repository whose key reads are counted, and fail while `down`. */
function repository() {
  const state = { reads: 0, down: false };
  const repo = {
    findKeyByHash: async () => {
      state.reads++;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (state.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return { credentialId: 'svc_a', prefix: 'svck_abc', revoked: false };
    },
  } as unknown as AuthRepository;
  return { state, repo };
}

const config = (seconds: number) => ({ AUTH_CACHE_SECONDS: seconds, API_KEY_HASH_KEY: 'test-hash-key' }) as AppConfig;

/** The catalogue of visit types, which these tests (of API keys) never ask. */
const NO_VISIT_TYPES = { codes: () => Promise.resolve(new Set<string>()) };
const NO_CLIENTS = { listBrands: () => Promise.resolve([]) } as unknown as ClientsService;

describe('AuthCacheService', () => {
  it('reads a key once for the lookups under way at once, even with caching off', async () => {
    const { state, repo } = repository();
    const cache = new AuthCacheService(repo, config(0), NO_VISIT_TYPES, NO_CLIENTS);
    const owners = await Promise.all([cache.keyOwner('svck_abc'), cache.keyOwner('svck_abc'), cache.apiKey('svck_abc')]);
    expect(owners).toEqual(['svc_a', 'svc_a', { credentialId: 'svc_a', prefix: 'svck_abc', revoked: false }]);
    expect(state.reads).toBe(1);
    await cache.keyOwner('svck_abc');
    expect(state.reads).toBe(2);
  });

  it('reads a key again after AUTH_CACHE_SECONDS even when the system clock stepped back meanwhile (NTP, a resumed machine)', async () => {
    jest.useFakeTimers({ doNotFake: ['setTimeout'] });
    try {
      const { state, repo } = repository();
      const cache = new AuthCacheService(repo, config(10), NO_VISIT_TYPES, NO_CLIENTS);
      expect(await cache.keyOwner('svck_abc')).toBe('svc_a');
      // The clock an hour back: a key revoked (or a credential disabled) meanwhile must not be taken for that hour.
      jest.setSystemTime(Date.now() - 3_600_000);
      jest.advanceTimersByTime(9_000);
      await cache.keyOwner('svck_abc');
      expect(state.reads).toBe(1);
      jest.advanceTimersByTime(1_001);
      await cache.keyOwner('svck_abc');
      expect(state.reads).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });

  it('answers a read that failed with its error for a second, without asking the database again, then asks', async () => {
    jest.useFakeTimers({ doNotFake: ['setTimeout'] });
    try {
      const { state, repo } = repository();
      const cache = new AuthCacheService(repo, config(10), NO_VISIT_TYPES, NO_CLIENTS);
      state.down = true;
      await expect(cache.keyOwner('svck_abc')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      await expect(cache.apiKey('svck_abc')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(state.reads).toBe(1);
      state.down = false;
      jest.advanceTimersByTime(1001);
      expect(await cache.keyOwner('svck_abc')).toBe('svc_a');
      expect(state.reads).toBe(2);
      // Kept now for AUTH_CACHE_SECONDS.
      expect(await cache.keyOwner('svck_abc')).toBe('svc_a');
      expect(state.reads).toBe(2);
    } finally {
      jest.useRealTimers();
    }
  });
});
