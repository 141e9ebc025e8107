import { Injectable } from '@nestjs/common';
import { ClientsService } from '../clients/clients.service.js';
import { withoutCredentials } from '../common/loggable-url.js';
import { OperatorError } from '../common/operator-error.js';
import { AppConfig } from '../config/app-config.js';
import { AuthRepository } from './auth.repository.js';
import { Credential } from './entities/credential.entity.js';
import { isScope, Scope } from './scopes.js';
import { clientSecretKey, DISPLAY_PREFIX_LENGTH, hashApiKey, hashSecret, newApiKey, matchingSecret, newClientId, newClientSecret } from './secrets.js';
import { VisitTypeCatalogue } from './visit-type-catalogue.js';

export interface NewCredentialInput {
  clients: number[];
  scopes: string[];
  brands?: number[];
  visitTypes?: string[];
  name?: string;
}

/** Shown once when a credential is created; only hashes are stored. */
export interface IssuedCredential {
  clientId: string;
  clientSecret: string;
  apiKey: string;
}

/** A credential made and not stored yet (see CredentialsService.make), with what it shows once. */
export interface MadeCredential {
  credential: Credential;
  key: { prefix: string; hash: string };
  issued: IssuedCredential;
}

export interface CredentialSummary {
  clientId: string;
  name: string | null;
  scopes: string[];
  clients: number[];
  brands: number[] | null;
  visitTypes: string[] | null;
  disabled: boolean;
  /** Until when the secret a rotation replaced still authenticates; null when none does. */
  previousSecretUntil: string | null;
  createdAt: string;
  keys: { prefix: string; revoked: boolean; createdAt: string }[];
}

/** What `credentials update` changes: each part given replaces the credential's (`null` brands or visit types: all). */
export interface CredentialChanges {
  clients?: number[];
  scopes?: string[];
  brands?: number[] | null;
  visitTypes?: string[] | null;
  name?: string;
}

/** A new client secret, shown once, and until when the one it replaced still authenticates (null: it no longer does). */
export interface RotatedSecret {
  clientId: string;
  clientSecret: string;
  previousSecretUntil: string | null;
}

/** A credential's secrets as stored: what a rotation replaces. */
export type SecretState = Pick<Credential, 'secretHash' | 'previousSecretHash' | 'previousSecretUntil'>;

/** How often a change of a credential is made again over a write of another command that came first before it gives up. */
const WRITE_ATTEMPTS = 5;

/** The longest a replaced secret may keep authenticating: 30 days. */
export const MAX_KEEP_OLD_HOURS = 720;

export const splitList = (text: string | null): string[] => (text ?? '').split(/[\s,]+/).filter(Boolean);

/** Provisioning of partner credentials and their API keys (operator CLI). */
@Injectable()
export class CredentialsService {
  constructor(
    private readonly repo: AuthRepository,
    private readonly clients: ClientsService,
    private readonly visitTypes: VisitTypeCatalogue,
    private readonly config: AppConfig,
  ) {}

  async add(input: NewCredentialInput): Promise<IssuedCredential> {
    const made = await this.make(input);
    await this.store([made]);
    return made.issued;
  }

  /**
   * A credential checked and made, with the secrets it shows once, but not stored: `store`
   * writes it. For a caller that must keep the secrets somewhere before the credential exists
   * (the demo's credentials file), so that a process stopped in between leaves no credential
   * whose secret nobody holds.
   */
  async make(input: NewCredentialInput): Promise<MadeCredential> {
    const entitlements = await this.checkedEntitlements(input);
    const clientSecret = newClientSecret();
    const { apiKey, prefix } = newApiKey();
    const credential = Object.assign(new Credential(), {
      clientId: newClientId(),
      name: input.name ?? null,
      secretHash: hashSecret(clientSecret, clientSecretKey(this.config.API_KEY_HASH_KEY)),
      previousSecretHash: null,
      previousSecretUntil: null,
      ...entitlements,
      disabled: false,
    });
    return { credential, key: { prefix, hash: hashApiKey(apiKey, this.config.API_KEY_HASH_KEY) }, issued: { clientId: credential.clientId, clientSecret, apiKey } };
  }

  /** Stores credentials `make` made, with their first keys, in one transaction: all of them or none. */
  async store(made: readonly MadeCredential[]): Promise<void> {
    await this.repo.createCredentials(made.map(({ credential, key }) => ({ credential, key })));
  }

  /**
   * Changes what a credential is entitled to: what `changes` names replaces what it had
   * (brands or visit types `null`: all), checked as `add` checks it, the result as a whole (its
   * brands must belong to its clients, whichever of the two changed). Tokens already issued
   * are held to the new entitlements within AUTH_CACHE_SECONDS. Gives the credential as listed.
   */
  async update(clientId: string, changes: CredentialChanges): Promise<CredentialSummary> {
    // Compare and set: a change written by another command since this one read the credential
    // is read again and this change made over it, never overwritten with what was read before.
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const current = await this.requireCredential(clientId);
      const merged: NewCredentialInput = {
        clients: changes.clients ?? splitList(current.clientIds).map(Number),
        scopes: changes.scopes ?? splitList(current.scopes),
        brands: changes.brands === undefined ? (current.brandIds === null ? undefined : splitList(current.brandIds).map(Number)) : (changes.brands ?? undefined),
        visitTypes: changes.visitTypes === undefined ? (current.visitTypes === null ? undefined : splitList(current.visitTypes)) : (changes.visitTypes ?? undefined),
        name: changes.name ?? current.name ?? undefined,
      };
      const entitlements = await this.checkedEntitlements(merged);
      const read = { scopes: current.scopes, clientIds: current.clientIds, brandIds: current.brandIds, visitTypes: current.visitTypes, name: current.name };
      if (await this.repo.replaceCredential(clientId, read, { ...entitlements, name: merged.name ?? null })) {
        const summary = (await this.list()).find((c) => c.clientId === clientId);
        if (summary) return summary;
      }
    }
    throw new OperatorError(`credential '${clientId}' changed ${WRITE_ATTEMPTS} times while this command ran: run it again`);
  }

  /**
   * A new client secret for a credential, shown once. The secret it had goes at once, or
   * authenticates too for `keepOldHours` (a partner's jobs move to the new one meanwhile); a
   * secret kept from a rotation before goes either way. Tokens already issued keep working
   * until they expire. Gives what `restoreSecret` needs should the new secret not be shown.
   */
  async rotateSecret(clientId: string, keepOldHours: number): Promise<{ rotated: RotatedSecret; before: SecretState }> {
    if (!(keepOldHours >= 0 && keepOldHours <= MAX_KEEP_OLD_HOURS)) throw new OperatorError(`--keep-old-hours must be a number of hours from 0 to ${MAX_KEEP_OLD_HOURS}`);
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const current = await this.requireCredential(clientId);
      const before: SecretState = { secretHash: current.secretHash, previousSecretHash: current.previousSecretHash, previousSecretUntil: current.previousSecretUntil };
      const clientSecret = newClientSecret();
      const until = keepOldHours > 0 ? new Date(Date.now() + Math.round(keepOldHours * 3_600_000)) : null;
      const secretHash = hashSecret(clientSecret, clientSecretKey(this.config.API_KEY_HASH_KEY));
      // Only over the secret read: the old one kept is the one this rotation replaced, not one a rotation meanwhile made.
      const written = await this.repo.replaceCredential(
        clientId,
        { secretHash: current.secretHash },
        { secretHash, previousSecretHash: until ? current.secretHash : null, previousSecretUntil: until },
      );
      if (written) return { rotated: { clientId, clientSecret, previousSecretUntil: until?.toISOString() ?? null }, before };
    }
    throw new OperatorError(`credential '${clientId}' changed ${WRITE_ATTEMPTS} times while this command ran: run it again`);
  }

  /**
   * Puts back the secret a rotation replaced: one whose new secret could not be shown (the CLI's
   * output failed), which nobody holds; only while that secret is still the one stored.
   */
  async restoreSecret(clientId: string, rotated: RotatedSecret, before: SecretState): Promise<void> {
    const secretHash = hashSecret(rotated.clientSecret, clientSecretKey(this.config.API_KEY_HASH_KEY));
    await this.repo.replaceCredential(clientId, { secretHash }, before);
  }

  /**
   * What a credential of `input` is entitled to, as stored, once every part is checked: its
   * clients and brands exist (the brands of its clients), its scopes and visit types are known,
   * no list is empty (stored, an empty list would read as "all"), its name fits.
   */
  private async checkedEntitlements(input: NewCredentialInput): Promise<Pick<Credential, 'scopes' | 'clientIds' | 'brandIds' | 'visitTypes'>> {
    if (input.clients.length === 0) throw new OperatorError('--clients needs at least one client id');
    // The column holds 200 characters (PostgreSQL refuses more; SQLite would keep them): refused alike on both.
    if (input.name !== undefined && (!input.name.trim() || [...input.name].length > 200)) throw new OperatorError('--name must be 1 to 200 characters');
    if (input.scopes.length === 0) throw new OperatorError('--scopes needs at least one scope');
    const clients = [...new Set(input.clients)];
    const brands = input.brands && [...new Set(input.brands)];
    for (const id of clients) {
      if (!(await this.clients.findClient(id))) throw new OperatorError(`client ${id} does not exist`);
    }
    const unknown = input.scopes.filter((s) => !isScope(s));
    if (unknown.length > 0) throw new OperatorError(`unknown scope(s): ${unknown.join(', ')}`);
    const scopes = [...new Set([Scope.Api, ...input.scopes])];
    if (brands?.length === 0) throw new OperatorError('--brands needs at least one brand id (leave it out for all brands)');
    if (input.visitTypes?.length === 0) throw new OperatorError('--visit-types needs at least one code (leave it out for all types)');
    for (const brandId of brands ?? []) {
      const brand = await this.clients.findBrand(brandId);
      if (!brand || !clients.includes(brand.clientId)) {
        throw new OperatorError(`brand ${brandId} is not a brand of client(s) ${clients.join(', ')}`);
      }
    }
    const knownTypes = await this.visitTypes.codes();
    const visitTypes = input.visitTypes && [...new Set(input.visitTypes.map((t) => t.toUpperCase()))];
    const badTypes = (visitTypes ?? []).filter((t) => !knownTypes.has(t));
    if (badTypes.length > 0) throw new OperatorError(`unknown visit type(s): ${badTypes.join(', ')}`);
    return {
      scopes: scopes.join(' '),
      clientIds: clients.join(','),
      brandIds: brands && brands.length > 0 ? brands.join(',') : null,
      visitTypes: visitTypes && visitTypes.length > 0 ? visitTypes.join(',') : null,
    };
  }

  async list(): Promise<CredentialSummary[]> {
    const keys = await this.repo.listKeys();
    const now = Date.now();
    return (await this.repo.listCredentials()).map((c) => ({
      clientId: c.clientId,
      name: c.name,
      scopes: splitList(c.scopes),
      clients: splitList(c.clientIds).map(Number),
      brands: c.brandIds === null ? null : splitList(c.brandIds).map(Number),
      visitTypes: c.visitTypes === null ? null : splitList(c.visitTypes),
      disabled: c.disabled,
      previousSecretUntil: c.previousSecretHash !== null && c.previousSecretUntil !== null && c.previousSecretUntil.getTime() > now ? c.previousSecretUntil.toISOString() : null,
      createdAt: c.createdAt.toISOString(),
      keys: keys
        .filter((k) => k.credentialId === c.clientId)
        .map((k) => ({ prefix: k.prefix, revoked: k.revoked, createdAt: k.createdAt.toISOString() })),
    }));
  }

  private async requireCredential(clientId: string): Promise<Credential> {
    const credential = await this.repo.findCredential(clientId);
    if (!credential) throw noCredential(clientId);
    return credential;
  }

  /** The scopes assigned to a credential; refuses one that does not exist. */
  async scopesOf(clientId: string): Promise<string[]> {
    return splitList((await this.requireCredential(clientId)).scopes);
  }

  /** Refuses a credential id that does not exist: for commands of other features that name one. */
  async assertExists(clientId: string): Promise<void> {
    await this.requireCredential(clientId);
  }

  /**
   * Why credentials as issued no longer get a token, or null when they still do: the
   * credential gone or disabled, its key revoked or another's, its secret another.
   */
  async whyUnusable(issued: IssuedCredential): Promise<string | null> {
    const credential = await this.repo.findCredential(issued.clientId);
    if (!credential) return 'it no longer exists';
    if (credential.disabled) return 'it is disabled';
    const key = await this.repo.findKeyByHash(hashApiKey(issued.apiKey, this.config.API_KEY_HASH_KEY));
    if (!key || key.revoked || key.credentialId !== issued.clientId) return 'its svc-api-key was revoked';
    const secretMatches = await matchingSecret(issued.clientSecret, credential, clientSecretKey(this.config.API_KEY_HASH_KEY), Date.now());
    return secretMatches !== null ? null : 'its client secret is no longer the one stored';
  }

  /**
   * Takes back a credential just made whose secret and key could not be shown (the CLI's output
   * failed): nobody holds them, so nothing may sign in with them, and nothing of it stays.
   */
  async takeBack(clientId: string): Promise<void> {
    await this.repo.deleteCredential(clientId);
  }

  /** Removes a key just added whose text nobody saw (the output could not be written): as if never made, not a revoked key left behind. */
  async takeBackKey(prefix: string): Promise<void> {
    await this.repo.deleteKey(prefix);
  }

  async disable(clientId: string): Promise<void> {
    await this.requireCredential(clientId);
    await this.repo.setDisabled(clientId, true);
  }

  async enable(clientId: string): Promise<void> {
    await this.requireCredential(clientId);
    await this.repo.setDisabled(clientId, false);
  }

  /** A further key for the same credential, so a partner can rotate without downtime. */
  async addKey(clientId: string): Promise<{ clientId: string; apiKey: string; prefix: string }> {
    await this.requireCredential(clientId);
    const { apiKey, prefix } = newApiKey();
    await this.repo.addKey(clientId, { prefix, hash: hashApiKey(apiKey, this.config.API_KEY_HASH_KEY) });
    return { clientId, apiKey, prefix };
  }

  /**
   * Revokes an API key named by its display prefix, or by the whole key (an operator often holds
   * the leaked key itself): a whole key is matched by its hash, so a made-up one revokes nothing.
   * Gives the key's prefix.
   */
  async revokeKey(prefixOrKey: string): Promise<string> {
    if (prefixOrKey.length > DISPLAY_PREFIX_LENGTH) {
      const whole = await this.repo.findKeyByHash(hashApiKey(prefixOrKey, this.config.API_KEY_HASH_KEY));
      if (!whole) throw new OperatorError(`no API key is '${prefixOrKey.slice(0, DISPLAY_PREFIX_LENGTH)}…': give the whole key, or its ${DISPLAY_PREFIX_LENGTH}-character prefix as credentials list shows it`);
      await this.repo.revokeKey(whole.prefix);
      return whole.prefix;
    }
    const key = await this.repo.findKeyByPrefix(prefixOrKey);
    if (!key) throw new OperatorError(`no API key has the prefix '${prefixOrKey}' (credentials list shows each key's ${DISPLAY_PREFIX_LENGTH}-character prefix)`);
    await this.repo.revokeKey(prefixOrKey);
    return prefixOrKey;
  }
}

/**
 * The error for a credential id that no credential has. A client secret, an API key or a token
 * pasted where a client id goes is quoted `[redacted]` and named for what it is: the error lands
 * in a terminal's or a Job's log.
 */
function noCredential(clientId: string): OperatorError {
  const shown = withoutCredentials(clientId);
  if (shown === clientId) return new OperatorError(`credential '${clientId}' does not exist`);
  return new OperatorError(`credential '${shown}' does not exist: that is a secret, an API key or a token by its form, not a client id (svc_…, as credentials list shows them)`);
}
