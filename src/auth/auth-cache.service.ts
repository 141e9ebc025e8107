import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { ClientsService } from '../clients/clients.service.js';
import { AppConfig } from '../config/app-config.js';
import { AuthRepository } from './auth.repository.js';
import { splitList } from './credentials.service.js';
import type { Credential } from './entities/credential.entity.js';
import { hashApiKey } from './secrets.js';
import { VisitTypeCatalogue } from './visit-type-catalogue.js';

export interface CachedKey {
  credentialId: string;
  prefix: string;
  revoked: boolean;
}

export interface CachedCredential {
  clientId: string;
  disabled: boolean;
  scopes: Set<string>;
  clients: Set<number>;
  brands: Set<number> | null;
  visitTypes: Set<string> | null;
  /** The brands a query may name: its own, or when it has no restriction every brand of its clients. */
  selectableBrands: ReadonlySet<number>;
  /** The visit types a query may name: its own, or when it has no restriction every known type. */
  selectableVisitTypes: ReadonlySet<string>;
  credential: Credential;
}

const MAX_ENTRIES = 10_000;

/** How long a failed read (the database away) is answered by its error without asking again. */
const FAILURE_MS = 1000;

/**
 * Values read at most every `ttlMs`. Reads of one key under way at once are one read; a read
 * that failed fails again for FAILURE_MS without asking, so that requests during an outage
 * (the rate limit's look at the API key, then the API key guard's) wait for one timeout, not
 * one each, and do not pile up on a database that does not answer. Times are on the monotonic
 * clock: a step of the system clock back by an hour must not keep a disabled credential working
 * for that hour.
 */
class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>();
  private readonly loading = new Map<string, Promise<V>>();
  private readonly failed = new Map<string, { error: unknown; until: number }>();
  /** Per key, the re-read under way (see readAgain), and the one that starts when it ends. */
  private readonly rereading = new Map<string, { ended: Promise<void>; next: Promise<V> | null }>();
  constructor(private readonly ttlMs: number) {}

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const hit = this.entries.get(key);
    if (hit && hit.expires > performance.now()) return hit.value;
    const failure = this.failed.get(key);
    if (failure && failure.until > performance.now()) throw failure.error;
    let pending = this.loading.get(key);
    if (pending === undefined) {
      pending = this.load(key, load).finally(() => this.loading.delete(key));
      this.loading.set(key, pending);
    }
    return pending;
  }

  private async load(key: string, load: () => Promise<V>): Promise<V> {
    try {
      const value = await load();
      this.failed.delete(key);
      if (this.ttlMs > 0) {
        if (this.entries.size >= MAX_ENTRIES) this.entries.clear();
        this.entries.set(key, { value, expires: performance.now() + this.ttlMs });
      }
      return value;
    } catch (error) {
      if (this.failed.size >= MAX_ENTRIES) this.failed.clear();
      this.failed.set(key, { error, until: performance.now() + FAILURE_MS });
      throw error;
    }
  }

  /**
   * Reads the value now, joining no read under way (one that began before the change the
   * caller looks for), and keeps it as get() would. A read that failed fails again for
   * FAILURE_MS without asking, as in get(), and leaves the value read before as it was: during
   * an outage, wrong secrets did not each wait for the database, and one of them dropped the
   * credential that the right secret was still checked against.
   */
  readAgain(key: string, load: () => Promise<V>): Promise<V> {
    // Asked while a re-read is under way: the one after it, which all asked meanwhile share, so
    // that wrong secrets sent at once cost two reads, not one each.
    const running = this.rereading.get(key);
    if (running) return (running.next ??= running.ended.then(() => this.reread(key, load)));
    return this.reread(key, load);
  }

  /** One re-read, known as under way until it ends (the part before its first await runs at once). */
  private async reread(key: string, load: () => Promise<V>): Promise<V> {
    const failure = this.failed.get(key);
    if (failure && failure.until > performance.now()) throw failure.error;
    const read = this.load(key, load);
    const ended = read.then(
      () => undefined,
      () => undefined,
    );
    const entry: { ended: Promise<void>; next: Promise<V> | null } = { ended, next: null };
    this.rereading.set(key, entry);
    void ended.then(() => {
      if (this.rereading.get(key) === entry) this.rereading.delete(key);
    });
    return read;
  }

  delete(key: string): void {
    this.entries.delete(key);
    this.failed.delete(key);
  }
}

/**
 * API keys and credentials as the guards see them, read from the database at most every
 * AUTH_CACHE_SECONDS (at most 30): a revoked key or disabled credential stops working
 * within that time on every replica, tokens already issued included.
 */
@Injectable()
export class AuthCacheService {
  private readonly keys: TtlCache<CachedKey | null>;
  private readonly credentials: TtlCache<CachedCredential | null>;
  /** Hashes of the API keys presented most recently, so a partner's key is not hashed on every request. */
  private readonly keyHashes = new LRUCache<string, string>({ max: MAX_ENTRIES });

  constructor(
    private readonly repo: AuthRepository,
    private readonly config: AppConfig,
    private readonly visitTypes: VisitTypeCatalogue,
    private readonly clients: ClientsService,
  ) {
    this.keys = new TtlCache(config.AUTH_CACHE_SECONDS * 1000);
    this.credentials = new TtlCache(config.AUTH_CACHE_SECONDS * 1000);
  }

  apiKey(presented: string): Promise<CachedKey | null> {
    let hash = this.keyHashes.get(presented);
    if (hash === undefined) {
      hash = hashApiKey(presented, this.config.API_KEY_HASH_KEY);
      // Only what can be a key: a caller could fill the memory with long values.
      if (presented.length <= 128) this.keyHashes.set(presented, hash);
    }
    return this.keys.get(hash, async () => {
      const key = await this.repo.findKeyByHash(hash);
      return key ? { credentialId: key.credentialId, prefix: key.prefix, revoked: key.revoked } : null;
    });
  }

  /** The client id of the credential a live (known, unrevoked) key belongs to; null for any other value. An arrow: the rate limits hold it. */
  readonly keyOwner = async (presented: string): Promise<string | null> => {
    const key = await this.apiKey(presented);
    return key && !key.revoked ? key.credentialId : null;
  };

  credential(clientId: string): Promise<CachedCredential | null> {
    return this.credentials.get(clientId, () => this.readCredential(clientId));
  }

  /**
   * The credential read from the database now, whatever this process kept: for a secret that
   * does not match the credential as read before, which another process may have rotated since.
   */
  credentialReadAgain(clientId: string): Promise<CachedCredential | null> {
    return this.credentials.readAgain(clientId, () => this.readCredential(clientId));
  }

  private async readCredential(clientId: string): Promise<CachedCredential | null> {
    const c = await this.repo.findCredential(clientId);
    if (!c) return null;
    const clients = new Set(splitList(c.clientIds).map(Number));
    const brands = c.brandIds === null ? null : new Set(splitList(c.brandIds).map(Number));
    const visitTypes = c.visitTypes === null ? null : new Set(splitList(c.visitTypes));
    // Read side by side: a database that answers slowly costs a request one wait, not two.
    const [selectableBrands, selectableVisitTypes] = await Promise.all([
      brands ?? Promise.all([...clients].map((id) => this.clients.listBrands(id))).then((lists) => new Set(lists.flat().map((b) => b.id))),
      visitTypes ?? this.visitTypes.codes(),
    ]);
    return {
      clientId: c.clientId,
      disabled: c.disabled,
      scopes: new Set(splitList(c.scopes)),
      clients,
      brands,
      visitTypes,
      selectableBrands,
      selectableVisitTypes,
      credential: c,
    };
  }

  /** Drops a cached credential whose row changed, so the next request reads the row again. */
  forgetCredential(clientId: string): void {
    this.credentials.delete(clientId);
  }
}
