import { jest } from '@jest/globals';
import { generateKeyPairSync, sign, verify } from 'node:crypto';
import { authFixture, type AuthFixture } from '../../test/helpers/auth-fixture.js';
import { fakeClocks } from '../../test/helpers/system-clock.js';
import { OperatorError } from '../common/operator-error.js';
import { SecretBox } from '../common/secret-box.js';
import { ConfigError, loadConfig, type AppConfig } from '../config/app-config.js';
import type { AuthRepository } from './auth.repository.js';
import { SigningKey } from './entities/signing-key.entity.js';
import { JWKS_MAX_AGE_SECONDS, KeyringService, PUBLISH_SECONDS } from './keyring.service.js';

const START = Date.parse('2026-12-02T10:00:00.000Z');
/** How long after its rotation a key signs, in ms. */
const LEAD = 420_000;

describe('signing key rotation on a database ring', () => {
  let f: AuthFixture;
  /** Another replica on the same database, which read the ring before the rotation. */
  let replica: KeyringService;
  let first: string;

  beforeEach(async () => {
    jest.useFakeTimers(fakeClocks(START, true));
    f = await authFixture({ AUTH_CACHE_SECONDS: '10' });
    replica = new KeyringService(f.repo, f.config);
    await replica.onModuleInit();
    first = (await f.keyring.signingKey()).kid;
  });

  afterEach(async () => {
    jest.useRealTimers();
    await f.close();
  });

  /** Time passes to START + ms (both clocks move); one earlier is a step back of the system clock alone. */
  const at = (ms: number) => {
    const ahead = START + ms - Date.now();
    if (ahead >= 0) jest.advanceTimersByTime(ahead);
    else jest.setSystemTime(START + ms);
  };
  const published = async (keyring: KeyringService) => (await keyring.jwks()).keys.map((k) => k.kid).sort();

  it('publishes a rotated key at once and signs with it, on every replica, only once the key set’s max-age, the longest AUTH_CACHE_SECONDS and a margin for clocks have passed', async () => {
    // The key set's max-age, the longest AUTH_CACHE_SECONDS, and room for clocks that differ: whatever this process's setting (10).
    expect(PUBLISH_SECONDS).toBe(JWKS_MAX_AGE_SECONDS + 30 + 90);
    at(1_000);
    const rotated = await f.keyring.rotate();
    expect(rotated).toEqual({ kid: expect.any(String), signsFrom: new Date(START + 1_000 + LEAD).toISOString() });
    expect(await published(f.keyring)).toEqual([first, rotated.kid].sort());
    expect((await f.keyring.signingKey()).kid).toBe(first);
    // The other replica reads the ring again after AUTH_CACHE_SECONDS, and publishes the key too.
    at(11_000);
    expect(await published(replica)).toEqual([first, rotated.kid].sort());
    expect((await replica.signingKey()).kid).toBe(first);

    at(1_000 + LEAD - 1);
    expect((await f.keyring.signingKey()).kid).toBe(first);
    expect((await replica.signingKey()).kid).toBe(first);
    at(1_000 + LEAD);
    expect((await f.keyring.signingKey()).kid).toBe(rotated.kid);
    expect((await replica.signingKey()).kid).toBe(rotated.kid);
    // Both keys still verify, the old one until it is retired.
    expect((await replica.verification(first)).key?.kid).toBe(first);
  });

  it('signs with a key rotated with `now` at once', async () => {
    at(1_000);
    const rotated = await f.keyring.rotate({ now: true });
    expect(rotated.signsFrom).toBe(new Date(START + 1_000).toISOString());
    expect((await f.keyring.signingKey()).kid).toBe(rotated.kid);
    // In the millisecond of the key that signs (or behind its clock), it still takes over, a millisecond later.
    const again = await f.keyring.rotate({ now: true });
    expect(again.signsFrom).toBe(new Date(START + 1_001).toISOString());
    at(1_001);
    expect((await f.keyring.signingKey()).kid).toBe(again.kid);
  });

  it('reads the ring again for a key another replica rotated in, even when its system clock stepped back since its last read', async () => {
    at(1_000);
    await replica.verification(first);
    // This replica's clock an hour back (NTP, a resumed machine), then another rotates with `now`.
    at(-3_600_000);
    at(-3_598_000);
    const rotated = await f.keyring.rotate({ now: true });
    expect((await replica.verification(rotated.kid)).key?.kid).toBe(rotated.kid);
  });

  it('keeps a published key’s turn when another is rotated in with `now` before it', async () => {
    const staged = await f.keyring.rotate();
    at(1_000);
    const urgent = await f.keyring.rotate({ now: true });
    expect((await f.keyring.signingKey()).kid).toBe(urgent.kid);
    at(LEAD - 1);
    expect((await f.keyring.signingKey()).kid).toBe(urgent.kid);
    at(LEAD);
    expect((await f.keyring.signingKey()).kid).toBe(staged.kid);
  });

  it('lists which key signs and when each begins to sign', async () => {
    at(1_000);
    const rotated = await f.keyring.rotate();
    const listed = await f.keyring.list();
    expect(listed).toEqual([
      { kid: rotated.kid, source: 'database', signing: false, createdAt: new Date(START + 1_000).toISOString(), signsFrom: rotated.signsFrom, retiredAt: null },
      { kid: first, source: 'database', signing: true, createdAt: new Date(START).toISOString(), signsFrom: new Date(START).toISOString(), retiredAt: null },
    ]);
    at(1_000 + LEAD);
    expect((await f.keyring.list()).map((k) => [k.kid, k.signing])).toEqual([
      [rotated.kid, true],
      [first, false],
    ]);
  });

  it('refuses to retire the key that signs until the published one has taken over, and then for AUTH_CACHE_SECONDS unless forced', async () => {
    const rotated = await f.keyring.rotate();
    await expect(f.keyring.retire(first)).rejects.toThrow(
      `'${first}' is the key that signs now, until ${rotated.kid} takes over at ${rotated.signsFrom}: retire it after that`,
    );
    await expect(f.keyring.retire(first, { force: true })).rejects.toThrow(`'${first}' is the key that signs now`);
    at(LEAD + 4_000);
    await expect(f.keyring.retire(first)).rejects.toThrow(
      `'${first}' signed new tokens until the rotation 4 s ago, and replicas go on signing with it for up to AUTH_CACHE_SECONDS (10 s) after it, tokens that retiring it now would break: retire it in 6 s, or now with --force (a compromised key)`,
    );
    at(LEAD + 10_000);
    expect(await f.keyring.retire(first)).toBe('retired');
    expect(await published(f.keyring)).toEqual([rotated.kid]);
    // Its private part is erased with it; the row stays for the list, the signing key keeps its own.
    const rows = await f.repo.allSigningKeys();
    expect(rows.map((r) => ({ kid: r.kid, privateKey: r.privateKey.slice(0, 3), retired: r.retiredAt !== null })).sort((a, b) => a.kid.localeCompare(b.kid))).toEqual(
      [
        { kid: first, privateKey: '', retired: true },
        { kid: rotated.kid, privateKey: 'v1.', retired: false },
      ].sort((a, b) => a.kid.localeCompare(b.kid)),
    );
    expect(await f.keyring.retire(first)).toBe('already');
  });

  it('retires a published key that has not begun to sign (the rotation called off), but not within AUTH_CACHE_SECONDS of its start unless forced', async () => {
    const early = await f.keyring.rotate();
    expect(await f.keyring.retire(early.kid)).toBe('retired');
    expect(await published(f.keyring)).toEqual([first]);
    at(LEAD);
    expect((await f.keyring.signingKey()).kid).toBe(first);

    const late = await f.keyring.rotate();
    at(LEAD + 415_000);
    await expect(f.keyring.retire(late.kid)).rejects.toThrow(
      `'${late.kid}' begins to sign in 5 s, and replicas that have not read the keys again by then (AUTH_CACHE_SECONDS, 10 s) would sign with it, tokens that retiring it now would break: retire it once it has been replaced, or now with --force`,
    );
    expect(await f.keyring.retire(late.kid, { force: true })).toBe('retired');
    at(LEAD + 430_000);
    expect((await f.keyring.signingKey()).kid).toBe(first);
  });

  it('keeps the key that lost a tie of two rotations at once from being retired while replicas may sign with it', async () => {
    at(1_000);
    // Two operators rotate at once: each saw the same key signing, so both keys begin at one time.
    const [one, two] = await Promise.all([f.keyring.rotate({ now: true }), replica.rotate({ now: true })]);
    expect(one.signsFrom).toBe(two.signsFrom);
    const listed = await f.keyring.list();
    const signing = listed.find((k) => k.signing)!.kid;
    const lost = signing === one.kid ? two.kid : one.kid;
    expect([one.kid, two.kid]).toContain(signing);
    // A replica that read the ring between the two may sign with the one that lost the tie.
    await expect(f.keyring.retire(lost)).rejects.toThrow(`'${lost}' signed new tokens until the rotation 0 s ago`);
    at(11_000);
    expect(await f.keyring.retire(lost)).toBe('retired');
  });

  it('signs from their creation with keys written before keys had a time to begin signing', async () => {
    at(1_000);
    const rotated = await f.keyring.rotate();
    await f.db.createQueryBuilder().update(SigningKey).set({ signsFrom: null }).execute();
    at(11_000);
    expect((await f.keyring.signingKey()).kid).toBe(rotated.kid);
    expect((await f.keyring.list()).map((k) => [k.kid, k.signing, k.signsFrom])).toEqual([
      [rotated.kid, true, new Date(START + 1_000).toISOString()],
      [first, false, new Date(START).toISOString()],
    ]);
  });
});

describe('signing keys from configuration', () => {
  afterEach(() => jest.useRealTimers());

  it('sign with the first key, whatever the clock does after they were read (a step back of NTP, a resumed machine)', async () => {
    jest.useFakeTimers(fakeClocks(START, true));
    const pem = () => generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const keyring = new KeyringService({} as AuthRepository, loadConfig({ JWT_SIGNING_KEYS: pem() + pem() + pem() }));
    await keyring.onModuleInit();
    const first = (await keyring.jwks()).keys[0].kid;
    for (const step of [0, -400, -1_500, -60_000]) {
      jest.setSystemTime(START + step);
      expect({ step, kid: (await keyring.signingKey()).kid }).toEqual({ step, kid: first });
    }
  });
});

describe('a database ring’s private keys at rest', () => {
  let f: AuthFixture;
  beforeEach(async () => {
    f = await authFixture();
  });
  afterEach(async () => {
    await f.close();
  });

  /** A key the ring gives, proven by a signature its published key verifies. */
  const signsAndVerifies = async (keyring: KeyringService): Promise<string> => {
    const key = await keyring.signingKey();
    const signature = sign('sha256', Buffer.from('payload'), key.privateKey);
    const published = (await keyring.verification(key.kid)).key;
    expect(published && verify('sha256', Buffer.from('payload'), published.publicKey, signature)).toBe(true);
    return key.kid;
  };

  it('are stored sealed under a key derived from API_KEY_HASH_KEY, never as a PEM, and sign and verify as before', async () => {
    await f.keyring.rotate({ now: true });
    const rows = await f.repo.allSigningKeys();
    expect(rows).toHaveLength(2);
    for (const row of rows) {
      expect(row.privateKey).toMatch(/^v1\.[\w-]+\.[\w-]+\.[\w-]+$/);
      expect(row.privateKey).not.toContain('PRIVATE KEY');
    }
    // Another replica of the same settings reads them.
    const replica = new KeyringService(f.repo, f.config);
    await replica.onModuleInit();
    expect(await signsAndVerifies(replica)).toBe(await signsAndVerifies(f.keyring));
  });

  it('read a key an earlier release stored in clear', async () => {
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const publicJwk = (await f.keyring.jwks()).keys[0];
    await f.repo.addSigningKey({ kid: 'stored-in-clear', alg: 'ES256', privateKey: pem, publicJwk: JSON.stringify(publicJwk), signsFrom: new Date() });
    const replica = new KeyringService(f.repo, f.config);
    await replica.onModuleInit();
    expect((await replica.jwks()).keys).toHaveLength(2);
    await signsAndVerifies(replica);
  });

  it('are not opened by a process with another API_KEY_HASH_KEY: it refuses to serve (exit 78 at start), names the keys when a token is asked for, and adds none', async () => {
    await f.keyring.rotate({ now: true });
    const replica = new KeyringService(f.repo, f.config);
    await replica.onModuleInit();
    const misconfigured = new KeyringService(f.repo, withOtherServerKey(f.config));
    await misconfigured.onModuleInit();
    expect(() => misconfigured.assertCanSign()).toThrow(ConfigError);
    expect(() => misconfigured.assertCanSign()).toThrow(
      /^Invalid configuration:\n {2}- API_KEY_HASH_KEY: signing keys \S+, \S+ cannot be decrypted with this API_KEY_HASH_KEY \(stored under another value\): set the value the database's keys, API keys and secrets were stored under$/,
    );
    await expect(misconfigured.signingKey()).rejects.toThrow(/^signing keys \S+, \S+ cannot be decrypted with this API_KEY_HASH_KEY/);
    await expect(misconfigured.rotate()).rejects.toThrow(OperatorError);
    await expect(misconfigured.rotate({ now: true })).rejects.toThrow(/run the command with the API_KEY_HASH_KEY the service runs with/);
    expect(await f.repo.allSigningKeys()).toHaveLength(2);
    // What it publishes is the ring's public keys all the same.
    expect((await misconfigured.jwks()).keys).toEqual((await replica.jwks()).keys);
    expect(() => replica.assertCanSign()).not.toThrow();
  });

  it('keep signing and verifying when a key sealed under another API_KEY_HASH_KEY is added: that key verifies, and is never the signer', async () => {
    const first = await signsAndVerifies(f.keyring);
    // A key added by a command run with another value, set to sign at once.
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const publicJwk = (await new KeyringService(f.repo, { ...f.config, JWT_SIGNING_KEYS: pem } as AppConfig).jwks()).keys[0];
    const sealedElsewhere = new SecretBox('another server key, also long enough', 'results-service token signing keys', 'signing key').seal(pem);
    await f.repo.addSigningKey({ kid: publicJwk.kid!, alg: 'ES256', privateKey: sealedElsewhere, publicJwk: JSON.stringify(publicJwk), signsFrom: new Date() });

    const replica = new KeyringService(f.repo, f.config);
    await replica.onModuleInit();
    expect(() => replica.assertCanSign()).not.toThrow();
    expect((await replica.jwks()).keys.map((k) => k.kid).sort()).toEqual([first, publicJwk.kid].sort());
    expect(await signsAndVerifies(replica)).toBe(first);
    // A token the other process signed with it verifies here.
    const signature = sign('sha256', Buffer.from('payload'), pem);
    const { key } = await replica.verification(publicJwk.kid!);
    expect(key && verify('sha256', Buffer.from('payload'), key.publicKey, signature)).toBe(true);
    // Rotating is refused until that key is retired (with --force: by its time it is the key
    // that signs now, which it does on no replica of this value), then works.
    await expect(replica.rotate()).rejects.toThrow(`signing key ${publicJwk.kid} cannot be decrypted with this API_KEY_HASH_KEY`);
    await expect(replica.retire(publicJwk.kid!)).rejects.toThrow(
      `'${publicJwk.kid}' cannot be decrypted with this API_KEY_HASH_KEY (stored under another value): retire it with --force if it was added with another value by mistake`,
    );
    expect(await replica.retire(publicJwk.kid!, { force: true })).toBe('retired');
    expect(await signsAndVerifies(replica)).toBe(first);
    await expect(replica.rotate()).resolves.toEqual({ kid: expect.any(String), signsFrom: expect.any(String) });
  });

  it('never retire the key that signs as replaced by a later key that does not open here, and never list that one as signing', async () => {
    const first = await signsAndVerifies(f.keyring);
    // A key added by a command run with another value, later in turn than the one that signs.
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }) as string;
    const publicJwk = (await new KeyringService(f.repo, { ...f.config, JWT_SIGNING_KEYS: pem } as AppConfig).jwks()).keys[0];
    const sealedElsewhere = new SecretBox('another server key, also long enough', 'results-service token signing keys', 'signing key').seal(pem);
    await f.repo.addSigningKey({ kid: publicJwk.kid!, alg: 'ES256', privateKey: sealedElsewhere, publicJwk: JSON.stringify(publicJwk), signsFrom: new Date(Date.now() + 1_000) });
    await new Promise((resolve) => setTimeout(resolve, 1_100));

    const replica = new KeyringService(f.repo, f.config);
    await replica.onModuleInit();
    expect(await signsAndVerifies(replica)).toBe(first);
    expect((await replica.list()).map((k) => ({ kid: k.kid, signing: k.signing })).sort((a, b) => a.kid.localeCompare(b.kid))).toEqual(
      [
        { kid: first, signing: true },
        { kid: publicJwk.kid!, signing: false },
      ].sort((a, b) => a.kid.localeCompare(b.kid)),
    );
    // --force retires a compromised key at once, but never the one that signs now.
    await expect(replica.retire(first, { force: true })).rejects.toThrow(new OperatorError(`'${first}' is the key that signs now: rotate first, then retire it`));
    expect((await f.repo.activeSigningKeys()).map((row) => row.kid).sort()).toEqual([first, publicJwk.kid].sort());
    expect(await signsAndVerifies(replica)).toBe(first);
  });
});

/** The settings with another API_KEY_HASH_KEY. */
function withOtherServerKey(config: AppConfig): AppConfig {
  return Object.assign(Object.create(Object.getPrototypeOf(config) as object) as AppConfig, config, {
    API_KEY_HASH_KEY: 'another server key, also long enough',
  });
}
