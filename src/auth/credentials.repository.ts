import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { ApiKey } from './entities/api-key.entity.js';
import { Credential } from './entities/credential.entity.js';

@Injectable()
export class CredentialsRepository {
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

  /** Stores a credential and its first key together. */
  async createCredential(credential: Credential, key: Pick<ApiKey, 'prefix' | 'hash'>): Promise<void> {
    await this.db.transaction(async (tx) => {
      await tx.getRepository(Credential).insert(credential);
      await tx.getRepository(ApiKey).insert({ ...key, credentialId: credential.clientId, revoked: false });
    });
  }

  async addKey(credentialId: string, key: Pick<ApiKey, 'prefix' | 'hash'>): Promise<void> {
    await this.db.getRepository(ApiKey).insert({ ...key, credentialId, revoked: false });
  }

  async setDisabled(clientId: string, disabled: boolean): Promise<void> {
    await this.db.getRepository(Credential).update({ clientId }, { disabled });
  }

  async revokeKey(prefix: string): Promise<void> {
    await this.db.getRepository(ApiKey).update({ prefix }, { revoked: true });
  }
}
