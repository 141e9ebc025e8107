import { readFileSync } from 'node:fs';
import { ConfigError } from '../config/app-config.js';
import { Injectable, Logger, type OnModuleInit } from '@nestjs/common';
import { calculateJwkThumbprint, exportJWK, exportPKCS8, generateKeyPair, type JWK } from 'jose';
import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto';
import { OperatorError } from '../common/operator-error.js';
import { SecretBox } from '../common/secret-box.js';
import { AppConfig } from '../config/app-config.js';
import { AuthRepository } from './auth.repository.js';
import type { SigningKey } from './entities/signing-key.entity.js';

export const SIGNING_ALG = 'ES256';

/** How long verifiers may keep the published key set (its `Cache-Control: max-age`). */
export const JWKS_MAX_AGE_SECONDS = 300;

/**
 * How long a rotated key is published before it signs: the key set's max-age, the longest
 * AUTH_CACHE_SECONDS (30) a replica may serve the set it read before the rotation (whatever
 * the setting of the process that rotates), and 90 s for clocks of hosts that differ.
 */
export const PUBLISH_SECONDS = JWKS_MAX_AGE_SECONDS + 30 + 90;

/** One key of the ring: every active key is published and verifies; the one whose `signsFrom` came last signs. */
export interface RingKey {
  kid: string;
  /**
   * Null for a stored key this process cannot open (sealed under another API_KEY_HASH_KEY):
   * it is published and verifies, from its stored public key, and never signs here.
   */
  privateKey: KeyObject | null;
  /** Verifies tokens: a key object made once, not a PEM parsed again for every request. */
  publicKey: KeyObject;
  publicJwk: JWK;
  createdAt: Date;
  /** When it begins to sign (its creation, but for a key a rotation published ahead). */
  signsFrom: Date;
  retiredAt: Date | null;
}

/**
 * The keys of a ring (newest first) in the order they take over signing: by `signsFrom`, and of
 * equal times the newer after the older, so that each key is followed by the one that
 * replaced it.
 */
function inTurn<K extends { signsFrom: Date }>(keys: readonly K[]): K[] {
  return keys
    .map((key, i) => ({ key, i }))
    .sort((a, b) => a.key.signsFrom.getTime() - b.key.signsFrom.getTime() || b.i - a.i)
    .map(({ key }) => key);
}

/**
 * The key that signs at `at`, of keys in turn (`inTurn`): the last whose `signsFrom` has come.
 * Every replica that holds the same ring and clock picks the same key, so a published key
 * takes over everywhere at one moment. Only keys still to come (a clock behind the one that
 * published them): the first of them.
 */
function signerIn<K extends { signsFrom: Date }>(turns: readonly K[], at: number): K | undefined {
  for (let i = turns.length - 1; i >= 0; i--) if (turns[i].signsFrom.getTime() <= at) return turns[i];
  return turns[0];
}

/** A key of the ring this process can sign with. */
export type SigningRingKey = RingKey & { privateKey: KeyObject };

const canSign = (key: RingKey): key is SigningRingKey => key.privateKey !== null;

/** When a stored key begins to sign: keys written before the column signed from their creation. */
const signsFromOf = (row: SigningKey): Date => row.signsFrom ?? row.createdAt;

const PEM_BLOCK = /-----BEGIN PRIVATE KEY-----[\s\S]+?-----END PRIVATE KEY-----/g;

/**
 * A database ring's private keys at rest: sealed (see SecretBox) under a key of their own,
 * derived from API_KEY_HASH_KEY, as webhook secrets are. A stolen table, a backup or a reader of
 * the database alone signs no token.
 */
function signingKeyBox(serverSecret: string): SecretBox {
  return new SecretBox(serverSecret, 'results-service token signing keys', 'signing key');
}

/** A private key a release from before keys were sealed stored: its PEM in clear, read as it is. */
const storedInClear = (stored: string): boolean => stored.startsWith('-----BEGIN');

/**
 * A key of the ring from its private key (a PEM or a key object), or from its public key alone
 * (a stored key this process cannot open: it verifies and does not sign).
 */
async function ringKey(key: string | KeyObject, createdAt: Date, signsFrom: Date, retiredAt: Date | null): Promise<RingKey> {
  const privateKey = typeof key === 'string' ? createPrivateKey(key) : key.type === 'private' ? key : null;
  const publicKey = privateKey ? createPublicKey(privateKey) : (key as KeyObject);
  const publicJwk = await exportJWK(publicKey);
  const kid = await calculateJwkThumbprint(publicJwk);
  return {
    kid,
    privateKey,
    publicKey,
    publicJwk: { ...publicJwk, kid, alg: SIGNING_ALG, use: 'sig' },
    createdAt,
    signsFrom,
    retiredAt,
  };
}

/**
 * The token signing keys. From configuration (JWT_SIGNING_KEYS or JWT_SIGNING_KEYS_FILE)
 * when set: the first key signs and all verify, rotation is a change of that secret. Else
 * from the database, where `signing-keys rotate` adds a key, published at once and signing
 * once verifiers that keep the key set for its max-age know it (or at once with `--now`), and
 * `signing-keys retire KID` stops an old one verifying. Key ids are RFC 7638 thumbprints.
 */
@Injectable()
export class KeyringService implements OnModuleInit {
  private readonly logger = new Logger('Keyring');
  private keys: RingKey[] = [];
  /** The database ring's keys in turn (those this process can open), read with them: signing picks from them without sorting per token. */
  private turns: SigningRingKey[] = [];
  /** When the keys were last read, on the monotonic clock: a step of the system clock (back by an hour) must not keep a rotation from this replica. */
  private loadedAt = -Infinity;
  /** When the ring in use was read, on the same clock (taken before its query, so a change committed during the read counts as after it). */
  private ringReadAt = -Infinity;
  private loading: Promise<void> | null = null;
  /** What is wrong with the configured keys as last read, while the keys read before them stand in; null when nothing is. */
  private reloadProblem: string | null = null;
  /** The stored keys this process could not open when it last read them (said once, until that changes). */
  private unopened = '';
  private readonly box: SecretBox;

  constructor(
    private readonly repo: AuthRepository,
    private readonly config: AppConfig,
  ) {
    this.box = signingKeyBox(config.API_KEY_HASH_KEY);
  }

  get fromConfig(): boolean {
    return Boolean(this.config.JWT_SIGNING_KEYS || this.config.JWT_SIGNING_KEYS_FILE);
  }

  /**
   * Loads the ring, and gives a database ring with no key its first one at start, so that
   * every replica knows the key before a token signed with it arrives.
   */
  async onModuleInit(): Promise<void> {
    try {
      await this.reload();
      if (this.keys.length === 0 && !this.fromConfig) await this.rotate({ now: true });
    } catch (error) {
      if (this.fromConfig) throw error;
      // The schema may not be migrated yet (readiness says so); the key is made on first use.
      this.logger.warn(`signing keys not loaded yet: ${(error as Error).message}`);
    }
  }

  /** The setting the keys come from (loadConfig refuses both at once). */
  private get keysSetting(): string {
    return this.config.JWT_SIGNING_KEYS !== undefined ? 'JWT_SIGNING_KEYS' : 'JWT_SIGNING_KEYS_FILE';
  }

  private configuredPems(): string[] {
    const setting = this.keysSetting;
    let text: string;
    try {
      text = this.config.JWT_SIGNING_KEYS ?? readFileSync(this.config.JWT_SIGNING_KEYS_FILE!, 'utf8');
    } catch (error) {
      throw new ConfigError([`JWT_SIGNING_KEYS_FILE: cannot read ${this.config.JWT_SIGNING_KEYS_FILE}: ${(error as Error).message}`]);
    }
    // A key in another form (SEC1's `EC PRIVATE KEY`, as `openssl ecparam -genkey` writes) would
    // be passed over without a word, and the rotation it was put first for would not happen.
    const other = /-----BEGIN ([A-Z0-9 ]+ )PRIVATE KEY-----/.exec(text);
    if (other) {
      throw new ConfigError([`${setting}: holds a ${other[1]}PRIVATE KEY, which is not PKCS#8: convert it with 'openssl pkcs8 -topk8 -nocrypt'`]);
    }
    const pems = text.match(PEM_BLOCK) ?? [];
    if (pems.length === 0) throw new ConfigError([`${setting}: holds no PKCS#8 PEM private key`]);
    return pems;
  }

  /** The configured keys, the first signing (it gets the newest time). */
  private async configuredKeys(): Promise<RingKey[]> {
    const setting = this.keysSetting;
    const pems = this.configuredPems();
    const privateKeys = pems.map((pem, i) => {
      try {
        return createPrivateKey(pem);
      } catch (error) {
        // A block whose contents are damaged (cut short, a line lost in copying); OpenSSL's reason shows nothing of the key.
        const which = pems.length > 1 ? `key ${i + 1} of ${pems.length}` : 'its key';
        throw new ConfigError([`${setting}: ${which} cannot be read as a PKCS#8 private key (${(error as Error).message})`]);
      }
    });
    // Checked before a JWK is made of them: a key of a type JWK has no form for would fail there with no setting named.
    if (privateKeys.some((key) => key.asymmetricKeyType !== 'ec' || key.asymmetricKeyDetails?.namedCurve !== 'prime256v1')) {
      throw new ConfigError([`${setting}: must hold P-256 (ES256) keys`]);
    }
    // A key whose private part no longer matches its public one (a character changed) still
    // parses, and every token request would fail: each must sign what its public key verifies.
    privateKeys.forEach((key, i) => {
      if (!signsForItsPublicKey(key)) {
        const which = pems.length > 1 ? `key ${i + 1} of ${pems.length}` : 'its key';
        throw new ConfigError([`${setting}: ${which} is damaged: its private part does not match its public key`]);
      }
    });
    return Promise.all(
      privateKeys.map((key, i) => {
        const createdAt = new Date(Date.now() - i * 1000);
        return ringKey(key, createdAt, createdAt, null);
      }),
    );
  }

  private async reload(): Promise<void> {
    const readAt = performance.now();
    if (this.fromConfig) {
      let keys: RingKey[];
      try {
        keys = await this.configuredKeys();
      } catch (error) {
        // At start a broken setting stops the process (exit 78). Later (the mounted file
        // replaced by a broken one, or removed), the keys read last keep signing and verifying:
        // one bad write of the Secret must not turn every replica into one that refuses every
        // request. Said once, until it is mended, and read again after AUTH_CACHE_SECONDS.
        if (this.keys.length === 0) throw error;
        const problem = error instanceof ConfigError ? error.problems.join('; ') : (error as Error).message;
        if (problem !== this.reloadProblem) this.logger.error(`${problem}: the signing keys read before keep signing and verifying until it is mended`);
        this.reloadProblem = problem;
        this.loadedAt = performance.now();
        this.ringReadAt = readAt;
        return;
      }
      if (this.reloadProblem !== null) this.logger.log('signing keys read again: the configured keys sign and verify');
      this.reloadProblem = null;
      this.keys = keys;
    } else {
      const rows = await this.repo.activeSigningKeys();
      // A key this process cannot open (added by a command run with another API_KEY_HASH_KEY)
      // verifies from its public key and does not sign here: every token request and every
      // bearer token failed (500) on every replica once one such key was stored.
      this.keys = await Promise.all(rows.map((row) => ringKey(this.opened(row) ?? publicKeyOf(row), row.createdAt, signsFromOf(row), row.retiredAt)));
      this.turns = inTurn(this.keys.filter(canSign));
      const unopened = this.keys.filter((key) => !canSign(key)).map((key) => key.kid);
      if (unopened.join(' ') !== this.unopened && unopened.length > 0) {
        const signs = this.turns.length > 0 ? 'this process signs with the others' : 'this process can sign no token';
        this.logger.error(`${cannotOpen(unopened)}: ${unopened.length === 1 ? 'it verifies' : 'they verify'} tokens, and ${signs}; retire ${unopened.length === 1 ? 'it' : 'them'} (signing-keys retire KID --force) if added by mistake`);
      }
      this.unopened = unopened.join(' ');
    }
    this.loadedAt = performance.now();
    this.ringReadAt = readAt;
  }

  /** The PEM of a stored key: opened, or as it is when an earlier release stored it in clear; null when this process's API_KEY_HASH_KEY does not open it. */
  private opened(row: SigningKey): string | null {
    if (storedInClear(row.privateKey)) return row.privateKey;
    try {
      return this.box.open(row.privateKey);
    } catch {
      return null;
    }
  }

  /**
   * Refuses to serve with a database ring of which it can open no key: its API_KEY_HASH_KEY is
   * not the one the keys (and the API keys and secrets) were stored under, and it could sign
   * no token. Called once the ring was read at start; a ring not read yet (the schema still to
   * be made) is left to the first request.
   */
  assertCanSign(): void {
    if (this.fromConfig || this.keys.length === 0 || this.turns.length > 0) return;
    throw new ConfigError([
      `API_KEY_HASH_KEY: ${cannotOpen(this.keys.map((key) => key.kid))}: set the value the database's keys, API keys and secrets were stored under`,
    ]);
  }

  private async fresh(force = false): Promise<RingKey[]> {
    // Read again after AUTH_CACHE_SECONDS (at most 30): a rotation or retirement reaches every replica.
    if (force || performance.now() - this.loadedAt >= this.config.AUTH_CACHE_SECONDS * 1000) {
      this.loading ??= this.reload().finally(() => (this.loading = null));
      await this.loading;
    }
    return this.keys;
  }

  /**
   * The key that signs new tokens; creates the first one for a database ring that has none.
   * Of configured keys the first signs, whatever the clock says.
   */
  async signingKey(): Promise<SigningRingKey> {
    const keys = await this.fresh();
    if (this.fromConfig) {
      if (!keys[0] || !canSign(keys[0])) throw new Error('no signing key is available');
      return keys[0];
    }
    let signer = signerIn(this.turns, Date.now());
    if (!signer && this.keys.length === 0) {
      await this.rotate({ now: true });
      signer = signerIn(this.turns, Date.now());
    }
    if (!signer) throw new Error(this.keys.length > 0 ? cannotOpen(this.keys.map((key) => key.kid)) : 'no signing key is available');
    return signer;
  }

  /**
   * The key a token names (a kid not seen yet triggers one re-read: another replica rotated),
   * and until when (ms on performance.now()'s clock) what the ring said of it may be relied on:
   * AUTH_CACHE_SECONDS after the ring was read. A token verified with it is remembered no longer
   * than that (VerifiedTokens), so a key retired elsewhere stops its tokens within
   * AUTH_CACHE_SECONDS of the retirement, however late in the ring's time a token came first.
   */
  async verification(kid: string): Promise<{ key: RingKey | undefined; trustedUntil: number }> {
    let key = (await this.fresh()).find((k) => k.kid === kid);
    if (!key && performance.now() - this.loadedAt >= 1000) key = (await this.fresh(true)).find((k) => k.kid === kid);
    return { key, trustedUntil: this.ringReadAt + this.config.AUTH_CACHE_SECONDS * 1000 };
  }

  async jwks(): Promise<{ keys: JWK[] }> {
    return { keys: (await this.fresh()).map((k) => k.publicJwk) };
  }

  /**
   * Adds a new key, published at once. It signs after PUBLISH_SECONDS, when every verifier
   * that keeps the key set no longer than its max-age knows it; with `now` (a compromised key)
   * it signs at once, on every replica within AUTH_CACHE_SECONDS. Older keys keep verifying
   * until retired.
   */
  async rotate({ now = false }: { now?: boolean } = {}): Promise<{ kid: string; signsFrom: string }> {
    if (this.fromConfig) {
      throw new OperatorError(
        'signing keys come from JWT_SIGNING_KEYS: rotate by adding the new key after the current one in that secret, then putting it first 7 minutes later',
      );
    }
    // A key sealed under another API_KEY_HASH_KEY than the service's would verify everywhere and
    // sign nowhere: a command run with another value is refused before it adds one. Judged by the
    // database's check value first: the first key of an empty ring, which every process (any
    // command too) makes at its start, was sealed under whatever value the process had, and
    // a service that opened none of the keys stopped (exit 78).
    await this.repo.assertKeyCheck(this.config);
    const unopened = (await this.repo.activeSigningKeys()).filter((row) => this.opened(row) === null).map((row) => row.kid);
    if (unopened.length > 0) {
      throw new OperatorError(
        `${cannotOpen(unopened)}: run the command with the API_KEY_HASH_KEY the service runs with; ` +
          `if this is that value, retire the keys it does not open (signing-keys retire KID --force) before rotating`,
      );
    }
    const { privateKey } = await generateKeyPair(SIGNING_ALG, { extractable: true });
    const pem = await exportPKCS8(privateKey);
    // The database's clock, not this process's: an operator's host ten minutes behind stamped a
    // key that signed on every replica at once, published for seconds instead of 7 minutes.
    const createdAt = await this.repo.now();
    let signsFrom = new Date(createdAt.getTime() + PUBLISH_SECONDS * 1000);
    if (now) {
      // After the key that signs now, even one stamped by a clock ahead of this one (or in the same millisecond).
      await this.fresh(true);
      const current = signerIn(this.turns, createdAt.getTime());
      signsFrom = new Date(Math.max(createdAt.getTime(), (current?.signsFrom.getTime() ?? 0) + 1));
    }
    const key = await ringKey(pem, createdAt, signsFrom, null);
    await this.repo.addSigningKey({
      kid: key.kid,
      alg: SIGNING_ALG,
      privateKey: this.box.seal(pem),
      publicJwk: JSON.stringify(key.publicJwk),
      createdAt,
      signsFrom,
    });
    this.logger.log(`signing key ${key.kid} added; it signs from ${signsFrom.toISOString()}`);
    await this.fresh(true);
    return { kid: key.kid, signsFrom: signsFrom.toISOString() };
  }

  /**
   * Stops a key verifying; tokens it signed are refused from then on. Refused for the key that
   * signs now, and (unless `force`, for a compromised key) for a key replicas may be signing with
   * for AUTH_CACHE_SECONDS, until they read the ring again: the key that signed until a
   * rotation less than that ago, and a published key that begins to sign within that time.
   * 'retired', or 'already' when it was (a second run of the same retirement changes nothing).
   */
  async retire(kid: string, { force = false }: { force?: boolean } = {}): Promise<'retired' | 'already'> {
    if (this.fromConfig) throw new OperatorError('signing keys come from JWT_SIGNING_KEYS: retire by removing the key from that secret');
    const rows = await this.repo.activeSigningKeys();
    const active = rows.map((row) => ({ kid: row.kid, signsFrom: signsFromOf(row) }));
    const key = active.find((k) => k.kid === kid);
    if (!key) {
      if ((await this.repo.allSigningKeys()).some((k) => k.kid === kid)) return 'already';
      throw new OperatorError(`no signing key has the id '${kid}'`);
    }
    // A key this process cannot open signs on no replica of its API_KEY_HASH_KEY, whatever its
    // time says (see reload): one added with another value by mistake goes with --force, as
    // the log's line says, and rotating (refused while it is there) works again. The only
    // active key too: after API_KEY_HASH_KEY was changed on purpose no key opens, rotating is
    // refused and a start stops (exit 78), so retiring them is the way on; the ring left empty
    // gets its first key from the service, as a new database's does.
    if (this.opened(rows.find((row) => row.kid === kid)!) === null) {
      if (!force) {
        throw new OperatorError(`'${kid}' ${cannotOpenIt}: retire it with --force if it was added with another value by mistake`);
      }
      await this.repo.retireSigningKey(kid, await this.repo.now());
      await this.fresh(true);
      return 'retired';
    }
    if (active.length === 1) throw new OperatorError(`'${kid}' is the only active signing key: rotate first`);
    // Judged by the clock the replicas' keys were stamped with (the database's), not this host's.
    const now = (await this.repo.now()).getTime();
    const window = this.config.AUTH_CACHE_SECONDS * 1000;
    // The key that took over from this one (or will): the next in turn among the keys that sign
    // (those this process opens, as reload takes them): a key it cannot open came later and
    // looked like the signer, so the one the service signs with was retired as replaced, and
    // every token request failed from then on.
    const turns = inTurn(active.filter((k) => k === key || this.opened(rows.find((row) => row.kid === k.kid)!) !== null));
    const next = turns[turns.indexOf(key) + 1];
    if (signerIn(turns, now)?.kid === kid) {
      throw new OperatorError(
        next
          ? `'${kid}' is the key that signs now, until ${next.kid} takes over at ${next.signsFrom.toISOString()}: retire it after that`
          : `'${kid}' is the key that signs now: rotate first, then retire it`,
      );
    }
    const seconds = this.config.AUTH_CACHE_SECONDS;
    if (!force && key.signsFrom.getTime() > now && key.signsFrom.getTime() - now < window) {
      const after = Math.ceil((key.signsFrom.getTime() - now) / 1000);
      throw new OperatorError(
        `'${kid}' begins to sign in ${after} s, and replicas that have not read the keys again by then (AUTH_CACHE_SECONDS, ${seconds} s) ` +
          `would sign with it, tokens that retiring it now would break: retire it once it has been replaced, or now with --force`,
      );
    }
    const sinceRotation = next ? now - next.signsFrom.getTime() : Infinity;
    if (!force && key.signsFrom.getTime() <= now && sinceRotation >= 0 && sinceRotation < window) {
      throw new OperatorError(
        `'${kid}' signed new tokens until the rotation ${Math.floor(sinceRotation / 1000)} s ago, and replicas go on signing with it ` +
          `for up to AUTH_CACHE_SECONDS (${seconds} s) after it, tokens that retiring it now would break: ` +
          `retire it in ${Math.ceil((window - sinceRotation) / 1000)} s, or now with --force (a compromised key)`,
      );
    }
    await this.repo.retireSigningKey(kid, new Date(now));
    await this.fresh(true);
    return 'retired';
  }

  /** Now by the clock keys' turns are stamped and judged by (the database's for a database ring: see AuthRepository.now). */
  now(): Promise<Date> {
    return this.fromConfig ? Promise.resolve(new Date()) : this.repo.now();
  }

  async list(): Promise<{ kid: string; source: string; signing: boolean; createdAt: string; signsFrom: string; retiredAt: string | null }[]> {
    if (this.fromConfig) {
      return (await this.fresh(true)).map((k, i) => ({
        kid: k.kid,
        source: 'config',
        signing: i === 0,
        createdAt: k.createdAt.toISOString(),
        signsFrom: k.signsFrom.toISOString(),
        retiredAt: null,
      }));
    }
    const rows = (await this.repo.allSigningKeys()).map((row) => ({ ...row, signsFrom: signsFromOf(row) }));
    // The key that signs is one of those this process opens (see reload), when it opens any.
    const active = rows.filter((r) => r.retiredAt === null);
    const opened = active.filter((r) => this.opened(r) !== null);
    const signing = signerIn(inTurn(opened.length > 0 ? opened : active), (await this.now()).getTime())?.kid;
    return rows.map((r) => ({
      kid: r.kid,
      source: 'database',
      signing: r.kid === signing,
      createdAt: r.createdAt.toISOString(),
      signsFrom: r.signsFrom.toISOString(),
      retiredAt: r.retiredAt?.toISOString() ?? null,
    }));
  }
}

/** The public key of a stored key, from its published JWK. */
function publicKeyOf(row: SigningKey): KeyObject {
  const { kty, crv, x, y } = JSON.parse(row.publicJwk) as JWK;
  return createPublicKey({ key: { kty, crv, x, y }, format: 'jwk' });
}

const cannotOpenIt = 'cannot be decrypted with this API_KEY_HASH_KEY (stored under another value)';

/** What to say of stored keys this process's API_KEY_HASH_KEY does not open. */
function cannotOpen(kids: string[]): string {
  const which = kids.length === 1 ? `signing key ${kids[0]}` : `signing keys ${kids.join(', ')}`;
  return `${which} ${cannotOpenIt}`;
}

/** Whether a signature made with the key verifies with the public key it carries. */
function signsForItsPublicKey(key: KeyObject): boolean {
  const data = Buffer.from('results-service signing key check');
  try {
    return verify('sha256', data, createPublicKey(key), sign('sha256', data, key));
  } catch {
    return false;
  }
}
