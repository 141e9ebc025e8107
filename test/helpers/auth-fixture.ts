import type { DataSource } from 'typeorm';
import { AuthCacheService } from '../../src/auth/auth-cache.service.js';
import { AuthRepository } from '../../src/auth/auth.repository.js';
import { Credential } from '../../src/auth/entities/credential.entity.js';
import { KeyringService } from '../../src/auth/keyring.service.js';
import { Scope } from '../../src/auth/scopes.js';
import { clientSecretKey, hashApiKey, hashSecret, newApiKey, newClientId, randomToken } from '../../src/auth/secrets.js';
import type { AppConfig } from '../../src/config/app-config.js';
import { openDataSource } from '../../src/database/migration-tools.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { isolatedConfig } from './test-config.js';
import { VisitTypeCodes } from '../../src/visits/visit-types.module.js';
import { ClientsRepository } from '../../src/clients/clients.repository.js';
import { ClientsService } from '../../src/clients/clients.service.js';

/** A credential stored in the fixture's database, with the secret and API key shown once. */
export interface StoredCredential {
  clientId: string;
  clientSecret: string;
  apiKey: string;
  keyPrefix: string;
}

export interface CredentialOptions {
  scopes?: string[];
  clients?: number[];
  brands?: number[] | null;
  visitTypes?: string[] | null;
  disabled?: boolean;
}

/**
 * The auth feature's own collaborators on a real, migrated database of the test file's own
 * (SQLite, or a PostgreSQL schema when the file runs on PostgreSQL), without the HTTP
 * application: for the unit tests of the guards and the token service.
 */
export interface AuthFixture {
  config: AppConfig;
  db: DataSource;
  repo: AuthRepository;
  cache: AuthCacheService;
  keyring: KeyringService;
  metrics: MetricsService;
  /** Stores a credential and its first API key as `credentials add` does. */
  addCredential: (options?: CredentialOptions) => Promise<StoredCredential>;
  close: () => Promise<void>;
}

export async function authFixture(env: Record<string, string> = {}): Promise<AuthFixture> {
  const { config, drop } = isolatedConfig(env);
  const db = await openDataSource(config);
  await db.runMigrations({ transaction: 'each' });
  const repo = new AuthRepository(db);
  const keyring = new KeyringService(repo, config);
  await keyring.onModuleInit();

  const addCredential = async (options: CredentialOptions = {}): Promise<StoredCredential> => {
    const clientSecret = randomToken(32);
    const { apiKey, prefix } = newApiKey();
    const credential = Object.assign(new Credential(), {
      clientId: newClientId(),
      name: null,
      secretHash: hashSecret(clientSecret, clientSecretKey(config.API_KEY_HASH_KEY)),
      scopes: [Scope.Api, ...(options.scopes ?? [Scope.VisitsStandard])].join(' '),
      clientIds: (options.clients ?? [1001]).join(','),
      brandIds: options.brands?.join(',') ?? null,
      visitTypes: options.visitTypes?.join(',') ?? null,
      disabled: options.disabled ?? false,
    });
    await repo.createCredentials([{ credential, key: { prefix, hash: hashApiKey(apiKey, config.API_KEY_HASH_KEY) } }]);
    return { clientId: credential.clientId, clientSecret, apiKey, keyPrefix: prefix };
  };

  return {
    config,
    db,
    repo,
    cache: new AuthCacheService(repo, config, new VisitTypeCodes(db), new ClientsService(new ClientsRepository(db))),
    keyring,
    metrics: new MetricsService(db),
    addCredential,
    close: async () => {
      await db.destroy();
      await drop();
    },
  };
}
