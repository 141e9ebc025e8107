import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { inTransaction } from '../database/transaction.js';
import { upsertRows } from '../database/upsert.js';
import { bumpDataVersion, lockClients } from './data-version.js';
import { Brand } from './entities/brand.entity.js';
import { Client } from './entities/client.entity.js';

@Injectable()
export class ClientsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  findClient(id: number): Promise<Client | null> {
    return this.db.getRepository(Client).findOneBy({ id });
  }

  listClients(): Promise<Client[]> {
    return this.db.getRepository(Client).find({ order: { id: 'ASC' } });
  }

  countClients(): Promise<number> {
    return this.db.getRepository(Client).count();
  }

  /**
   * Adds or renames the client; the same name again writes nothing (pages, ETags and the feed
   * stay as they are). `renamed` follows a rename of the stored client, in the transaction.
   */
  async saveClient(id: number, name: string, renamed: (tx: EntityManager) => Promise<void>): Promise<Client> {
    await inTransaction(this.db, async (tx) => {
      await lockClients(tx, [id]);
      const stored = await tx.getRepository(Client).findOneBy({ id });
      if (stored?.name === name) return;
      await tx.getRepository(Client).upsert({ id, name }, ['id']);
      await bumpDataVersion(tx, [id]);
      if (stored) await renamed(tx);
    });
    return (await this.findClient(id))!;
  }

  findBrand(id: number): Promise<Brand | null> {
    return this.db.getRepository(Brand).findOneBy({ id });
  }

  listBrands(clientId: number): Promise<Brand[]> {
    return this.db.getRepository(Brand).find({ where: { clientId }, order: { id: 'ASC' } });
  }

  /** Adds or renames the brand; the same name again writes nothing. `renamed` follows a rename of the client's stored brand, in the transaction. */
  async saveBrand(brand: Pick<Brand, 'id' | 'clientId' | 'name'>, renamed: (tx: EntityManager) => Promise<void>): Promise<Brand> {
    await inTransaction(this.db, async (tx) => {
      // The client's row first, as every writer takes it; then the brand, only over a brand of
      // this client (another `brands add` may have given the id to another client meanwhile).
      await lockClients(tx, [brand.clientId]);
      const stored = await tx.getRepository(Brand).findOneBy({ id: brand.id });
      if (stored?.clientId === brand.clientId && stored.name === brand.name) return;
      await bumpDataVersion(tx, [brand.clientId]);
      await upsertRows(tx, Brand, [Object.assign(new Brand(), brand)], ['id'], { sameOwner: 'clientId' });
      if (stored?.clientId === brand.clientId) await renamed(tx);
    });
    return (await this.findBrand(brand.id))!;
  }
}
