import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { stallDuring } from '../../test/helpers/event-loop.js';
import { lockedFor } from '../../test/helpers/sqlite-lock.js';
import { AuthRepository } from './auth.repository.js';
import { ApiKey } from './entities/api-key.entity.js';
import { Credential } from './entities/credential.entity.js';
import { SigningKey } from './entities/signing-key.entity.js';

/** The connection's busy timeout (DATABASE_QUERY_TIMEOUT_MS): how long a write waits for another process's write lock. */
const BUSY_TIMEOUT_MS = 3000;

describe('AuthRepository writes a token request makes, on SQLite while another process holds the write lock', () => {
  let db: DataSource;
  let repo: AuthRepository;
  /** The other writer: an import in another process, as far as SQLite can tell. */
  let other: Database.Database;

  beforeAll(async () => {
    const file = join(mkdtempSync(join(tmpdir(), 'auth-lock-')), 'auth.sqlite');
    // The service's settings: WAL, and a write's wait for another process's bounded by the busy timeout.
    db = await new DataSource({ type: 'better-sqlite3', database: file, enableWAL: true, timeout: BUSY_TIMEOUT_MS, entities: [Credential, ApiKey, SigningKey], synchronize: true }).initialize();
    repo = new AuthRepository(db);
    await db.getRepository(Credential).insert({ clientId: 'svc_1', name: null, secretHash: 'scrypt$old', scopes: 'visits/standard.read', clientIds: '1001', brandIds: null, visitTypes: null });
    other = new Database(file);
  });
  afterAll(async () => {
    if (other.inTransaction) other.exec('ROLLBACK');
    other.close();
    await db.destroy();
  });

  const storedHash = () => (other.prepare('SELECT secret_hash AS hash FROM credentials WHERE client_id = ?').get('svc_1') as { hash: string }).hash;

  it("waits for the lock to upgrade a secret's hash with the event loop free, and gives up after the busy timeout", async () => {
    other.exec('BEGIN IMMEDIATE');
    // Before the fix the UPDATE waited inside SQLite's busy handler: the event loop (every
    // request of the process, health probes included) stood still for the whole busy timeout.
    const { stall, ms, result } = await stallDuring(() => repo.replaceSecretHash('svc_1', 'scrypt$old', 'hmac-sha256$new'));
    other.exec('ROLLBACK');
    expect(result.status).toBe('rejected');
    expect(((result as PromiseRejectedResult).reason as { code?: string }).code).toBe('SQLITE_BUSY');
    expect(ms).toBeGreaterThanOrEqual(BUSY_TIMEOUT_MS - 100);
    expect(stall).toBeLessThan(BUSY_TIMEOUT_MS / 2);
    expect(storedHash()).toBe('scrypt$old');
  });

  it("upgrades the secret's hash once the other writer commits, and only while it is still the one read", async () => {
    const committed = lockedFor(other, 400);
    const { stall, result } = await stallDuring(() => repo.replaceSecretHash('svc_1', 'scrypt$old', 'hmac-sha256$new'));
    await committed;
    expect(result.status).toBe('fulfilled');
    expect(stall).toBeLessThan(BUSY_TIMEOUT_MS / 2);
    expect(storedHash()).toBe('hmac-sha256$new');
    await repo.replaceSecretHash('svc_1', 'scrypt$old', 'hmac-sha256$other');
    expect(storedHash()).toBe('hmac-sha256$new');
  });

  it('adds a signing key with the event loop free while it waits for the lock', async () => {
    other.exec('BEGIN IMMEDIATE');
    const key = { kid: 'k1', alg: 'ES256', privateKey: 'sealed', publicJwk: '{}', signsFrom: new Date() };
    const { stall, result } = await stallDuring(() => repo.addSigningKey(key));
    other.exec('ROLLBACK');
    expect(result.status).toBe('rejected');
    expect(stall).toBeLessThan(BUSY_TIMEOUT_MS / 2);
    await repo.addSigningKey(key);
    expect((await repo.allSigningKeys()).map((k) => k.kid)).toEqual(['k1']);
  });
});
