import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { OperatorError } from '../common/operator-error.js';
import { characters, isStorableText } from '../common/record-reader.js';
import { ClientsRepository } from './clients.repository.js';
import type { Brand } from './entities/brand.entity.js';
import type { Client } from './entities/client.entity.js';

/** A client or brand renamed: the visits that carry its name (the client's, or the brand's of it). */
export interface Renamed {
  clientId: number;
  brandId?: number;
}

/**
 * What follows a rename, in its transaction, with the client's row locked: the visits feature
 * writes the visits that show the name again, so the change feed brings them with it.
 */
export type FollowRename = (tx: EntityManager, renamed: Renamed) => Promise<void>;

/**
 * Clients and brands: provisioning (operator CLI), and the look-ups other features make
 * (credentials, imports), which reach the clients' data only through this service.
 */
@Injectable()
export class ClientsService {
  private followRename: FollowRename = () => Promise.resolve();

  constructor(private readonly repo: ClientsRepository) {}

  /** Sets what follows each rename (the visits feature, which this one cannot depend on). */
  followRenames(follow: FollowRename): void {
    this.followRename = follow;
  }

  async addClient(id: number, name: string): Promise<Client> {
    if (!Number.isSafeInteger(id) || id <= 0) throw new OperatorError(`client id must be an integer greater than 0: '${id}'`);
    checkName('client', name);
    return this.repo.saveClient(id, name, (tx) => this.followRename(tx, { clientId: id }));
  }

  listClients(): Promise<Client[]> {
    return this.repo.listClients();
  }

  /** The client, or null when there is none with this id. */
  findClient(id: number): Promise<Client | null> {
    return this.repo.findClient(id);
  }

  /** Whether any client exists yet (the demo data is loaded only into an empty database). */
  async anyClient(): Promise<boolean> {
    return (await this.repo.countClients()) > 0;
  }

  async requireClient(id: number): Promise<Client> {
    const client = await this.repo.findClient(id);
    if (!client) throw new OperatorError(`client ${id} does not exist; add it with 'clients add'`);
    return client;
  }

  async addBrand(clientId: number, id: number, name: string): Promise<Brand> {
    await this.requireClient(clientId);
    if (!Number.isSafeInteger(id) || id <= 0) throw new OperatorError(`brand id must be an integer greater than 0: '${id}'`);
    checkName('brand', name);
    const existing = await this.repo.findBrand(id);
    if (existing && existing.clientId !== clientId) {
      throw new OperatorError(`brand ${id} belongs to client ${existing.clientId}, not ${clientId}`);
    }
    return this.repo.saveBrand({ id, clientId, name }, (tx) => this.followRename(tx, { clientId, brandId: id }));
  }

  /** The brand, or null when there is none with this id. */
  findBrand(id: number): Promise<Brand | null> {
    return this.repo.findBrand(id);
  }

  listBrands(clientId: number): Promise<Brand[]> {
    return this.repo.listBrands(clientId);
  }
}

/**
 * A client's or brand's name is kept as given, as every imported text is (pages serve it so):
 * not blank, at most 200 characters (code points), nothing a column cannot keep as given.
 */
function checkName(what: 'client' | 'brand', name: string): void {
  if (name.trim() === '') throw new OperatorError(`${what} name must not be blank`);
  if (characters(name) > 200) throw new OperatorError(`${what} name must be at most 200 characters: it has ${characters(name)}`);
  if (!isStorableText(name)) throw new OperatorError(`${what} name must not contain NUL characters or unpaired UTF-16 surrogates`);
}
