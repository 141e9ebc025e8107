import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, IsNull, type FindOptionsWhere } from 'typeorm';
import { ApiKey } from './entities/api-key.entity.js';
import { Credential } from './entities/credential.entity.js';
import { SigningKey } from './entities/signing-key.entity.js';
import type { AppConfig } from '../config/app-config.js';
import { databaseNow } from '../database/database-clock.js';
import { assertKeyCheck } from '../database/setting-checks.js';
import { inTransaction } from '../database/transaction.js';

/** The columns of a credential a compare and set may compare: its texts (a timestamp reads back in another form). */
type TextColumn = 'secretHash' | 'scopes' | 'clientIds' | 'brandIds' | 'visitTypes' | 'name';

/** What a retired key keeps of its private part: nothing (see retireSigningKey). */
const RETIRED_PRIVATE_KEY = '';

/** Credentials, their API keys and the token signing keys: all SQL of the auth feature. */
@Injectable()
export class AuthRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  findCredential(clientId: string): Promise<Credential | null> {
    return this.db.getRepository(Credential).findOneBy({ clientId });
  }

  listCredentials(): Promise<Credential[]> {
    return this.db.getRepository(Credential).find({ order: { createdAt: 'ASC', clientId: 'ASC' } });
  }

  listKeys(): Promise<ApiKey[]> {
    return this.db.getRepository(ApiKey).find({ order: { id: 'ASC' } });
  }

  findKeyByHash(hash: string): Promise<ApiKey | null> {
    return this.db.getRepository(ApiKey).findOneBy({ hash });
  }

  findKeyByPrefix(prefix: string): Promise<ApiKey | null> {
    return this.db.getRepository(ApiKey).findOneBy({ prefix });
  }

  /**
   * Credentials with their first keys, in one transaction: all of them or none. Each is dated by
   * databaseNow when it is made, not by the column's default: SQLite's datetime('now') keeps
   * whole seconds, where PostgreSQL's now() keeps microseconds, so `credentials list` (by
   * createdAt, then client id) gave credentials made within one second in the order of their
   * random client ids on SQLite and in the order they were made on PostgreSQL, and showed
   * `createdAt` at another precision.
   */
  async createCredentials(made: readonly { credential: Credential; key: Pick<ApiKey, 'prefix' | 'hash'> }[]): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      for (const { credential, key } of made) {
        credential.createdAt = await databaseNow(tx);
        await tx.getRepository(Credential).insert(credential);
        await tx.getRepository(ApiKey).insert({ ...key, credentialId: credential.clientId, revoked: false, createdAt: credential.createdAt });
      }
    });
  }

  /** Deletes a credential and its keys: one just made whose secret was never shown (see CredentialsService.takeBack). */
  async deleteCredential(clientId: string): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      await tx.getRepository(ApiKey).delete({ credentialId: clientId });
      await tx.getRepository(Credential).delete({ clientId });
    });
  }

  async addKey(credentialId: string, key: Pick<ApiKey, 'prefix' | 'hash'>): Promise<void> {
    // Dated as createCredentials dates a credential's first key (see there).
    await this.db.getRepository(ApiKey).insert({ ...key, credentialId, revoked: false, createdAt: await databaseNow(this.db) });
  }

  /**
   * Replaces a credential's secret hash only while it still is `from`, so that replicas
   * upgrading the same hash at once all succeed and none overwrites a newer one.
   *
   * In a transaction, though it is one statement: a token request makes this write, and on
   * SQLite a statement outside a transaction waits for another process's write lock inside
   * SQLite's busy handler, which holds the event loop. One token request of a credential whose
   * secret was stored in the older form, while a branches import held the lock, stalled every
   * request of the process (health probes included) for DATABASE_QUERY_TIMEOUT_MS, 10 s; a
   * transaction waits between tries with the loop free (see inTransaction).
   */
  async replaceSecretHash(clientId: string, from: string, to: string): Promise<void> {
    await inTransaction(this.db, (tx) => tx.getRepository(Credential).update({ clientId, secretHash: from }, { secretHash: to }));
  }

  /**
   * Writes `changes` to a credential only while its columns named in `expected` still hold those
   * values (compare and set); false when they do not (another write came first, or it is gone).
   */
  async replaceCredential(clientId: string, expected: Partial<Pick<Credential, TextColumn>>, changes: Partial<Credential>): Promise<boolean> {
    const where: FindOptionsWhere<Credential> = { clientId };
    for (const [column, value] of Object.entries(expected) as [TextColumn, string | null][]) where[column] = value === null ? IsNull() : value;
    const result = await this.db.getRepository(Credential).update(where, changes);
    return (result.affected ?? 0) > 0;
  }

  async setDisabled(clientId: string, disabled: boolean): Promise<void> {
    await this.db.getRepository(Credential).update({ clientId }, { disabled });
  }

  /** Removes a key outright: one never shown to anyone (see CredentialsService.takeBackKey). */
  async deleteKey(prefix: string): Promise<void> {
    await this.db.getRepository(ApiKey).delete({ prefix });
  }

  async revokeKey(prefix: string): Promise<void> {
    await this.db.getRepository(ApiKey).update({ prefix }, { revoked: true });
  }

  /**
   * The time keys are stamped and judged by when they are rotated or retired: the database's
   * clock on PostgreSQL, which every replica and operator's command shares, so a command run
   * on a host whose clock is off neither cuts a key's publication short nor retires a key
   * that still signs; the process's clock on SQLite (one host).
   */
  now(): Promise<Date> {
    return databaseNow(this.db);
  }

  /** Signing keys not retired, newest first. */
  activeSigningKeys(): Promise<SigningKey[]> {
    return this.db.getRepository(SigningKey).find({ where: { retiredAt: IsNull() }, order: { createdAt: 'DESC', kid: 'DESC' } });
  }

  allSigningKeys(): Promise<SigningKey[]> {
    return this.db.getRepository(SigningKey).find({ order: { createdAt: 'DESC', kid: 'DESC' } });
  }

  /**
   * Refuses (an OperatorError), before a signing key is sealed, when the database's check value
   * of API_KEY_HASH_KEY is another value's (see src/database/setting-checks.ts).
   */
  assertKeyCheck(config: AppConfig): Promise<void> {
    return assertKeyCheck(this.db, config);
  }

  /** In a transaction, for the event loop's sake as replaceSecretHash: the service makes its first key on first use when it could not at start. */
  async addSigningKey(key: Pick<SigningKey, 'kid' | 'alg' | 'privateKey' | 'publicJwk' | 'signsFrom'> & { createdAt?: Date }): Promise<void> {
    await inTransaction(this.db, (tx) => tx.getRepository(SigningKey).insert(key));
  }

  /**
   * Retires a key for good: its private part is erased with it (a retired key never signs or
   * verifies again), so that the table and every backup taken from then on hold no key that
   * signed tokens, sealed or not; its id, public key and dates stay for `signing-keys list`.
   * `at`: the time the retirement was judged by (now()), not this host's clock.
   */
  async retireSigningKey(kid: string, at: Date): Promise<boolean> {
    const result = await this.db.getRepository(SigningKey).update({ kid, retiredAt: IsNull() }, { retiredAt: at, privateKey: RETIRED_PRIVATE_KEY });
    return (result.affected ?? 0) > 0;
  }
}
