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

/** A repository whose credential reads are counted, fail while `down`, and give `secretHash` as it is when read. */
function credentialRepository() {
  const state = { reads: 0, down: false, secretHash: 'first' };
  const repo = {
    findCredential: async (clientId: string) => {
      state.reads++;
      const secretHash = state.secretHash;
      await new Promise((resolve) => setTimeout(resolve, 5));
      if (state.down) throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
      return { clientId, disabled: false, scopes: 'svc-results-api', clientIds: '1', brandIds: '1', visitTypes: 'dine_in', secretHash };
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

  it('keeps the credential read before when reading it again fails, and asks the database once a second for such reads', async () => {
    // The monotonic clock stands still unless advanced: the second's window does not depend on the machine's speed.
    jest.useFakeTimers({ doNotFake: ['setTimeout'] });
    try {
      const { state, repo } = credentialRepository();
      const cache = new AuthCacheService(repo, config(10), NO_VISIT_TYPES, NO_CLIENTS);
      expect((await cache.credential('svc_a'))?.credential.secretHash).toBe('first');
      state.down = true;
      // Wrong secrets during an outage: each is refused with the outage, without a wait of its own on the database.
      await expect(cache.credentialReadAgain('svc_a')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      await expect(cache.credentialReadAgain('svc_a')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(state.reads).toBe(2);
      // The right secret is still checked against the credential as read before the outage.
      expect((await cache.credential('svc_a'))?.credential.secretHash).toBe('first');
      expect(state.reads).toBe(2);
      // A second later the database is asked again.
      jest.advanceTimersByTime(1001);
      await expect(cache.credentialReadAgain('svc_a')).rejects.toMatchObject({ code: 'ECONNREFUSED' });
      expect(state.reads).toBe(3);
    } finally {
      jest.useRealTimers();
    }
  });

  it('reads a credential again at most twice for the re-reads asked at once, each after it was asked', async () => {
    const { state, repo } = credentialRepository();
    const cache = new AuthCacheService(repo, config(10), NO_VISIT_TYPES, NO_CLIENTS);
    await cache.credential('svc_a');
    const first = cache.credentialReadAgain('svc_a');
    // Changed after the first re-read began: the re-reads asked from here on must see it.
    state.secretHash = 'second';
    const later = Array.from({ length: 20 }, () => cache.credentialReadAgain('svc_a'));
    expect((await first)?.credential.secretHash).toBe('first');
    expect((await Promise.all(later)).map((c) => c?.credential.secretHash)).toEqual(Array(20).fill('second'));
    expect(state.reads).toBe(3);
  });});

describe('AuthCacheService credential reads', () => {
  it("reads an unrestricted credential's brands and the visit types side by side, so a slow database costs one wait for both", async () => {
    const started: string[] = [];
    let answer!: () => void;
    const held = new Promise<void>((resolve) => (answer = resolve));
    const repo = {
      findCredential: (clientId: string) =>
        Promise.resolve({ clientId, disabled: false, scopes: 'svc-results-api', clientIds: '1,2', brandIds: null, visitTypes: null, secretHash: 'x' }),
    } as unknown as AuthRepository;
    const clients = {
      listBrands: async (id: number) => {
        started.push(`brands ${id}`);
        await held;
        return [{ id: id * 10 }];
      },
    } as unknown as ClientsService;
    const visitTypes = {
      codes: async () => {
        started.push('visit types');
        await held;
        return new Set(['MV']);
      },
    };
    const cache = new AuthCacheService(repo, config(10), visitTypes, clients);
    const read = cache.credential('svc_a');
    // Every read under way before any has answered.
    for (let i = 0; i < 20 && started.length < 3; i++) await Promise.resolve();
    expect([...started].sort()).toEqual(['brands 1', 'brands 2', 'visit types']);
    answer();
    expect(await read).toMatchObject({ brands: null, visitTypes: null, selectableBrands: new Set([10, 20]), selectableVisitTypes: new Set(['MV']) });
  });
});
