import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, type EntityManager } from 'typeorm';
import { Branch } from './entities/branch.entity.js';
import { bumpDataVersion, lockClients } from '../clients/data-version.js';
import { inTransaction } from '../database/transaction.js';
import { upsertRows } from '../database/upsert.js';

@Injectable()
export class BranchesRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * The client's branches in the code point order of their ids: the GET /branches payload. With a list of brands, only
   * the branches of those brands (an empty list: none; a branch without a brand is in no list).
   */
  async list(clientId: number, brandIds: readonly number[] | null): Promise<Pick<Branch, 'id' | 'name' | 'branchCode'>[]> {
    if (brandIds?.length === 0) return [];
    const query = this.db
      .getRepository(Branch)
      .createQueryBuilder('b')
      .select(['b.id', 'b.name', 'b.branchCode'])
      .where('b.clientId = :clientId', { clientId });
    if (brandIds) query.andWhere('b.brandId IN (:...brandIds)', { brandIds: [...brandIds] });
    // Code point order on both databases: SQLite compares text by its bytes, and so does
    // PostgreSQL's "C" collation, whatever collation the database was created with.
    return query.orderBy(this.db.options.type === 'postgres' ? 'b.id COLLATE "C"' : 'b.id', 'ASC').getMany();
  }

  findByIds(ids: string[]): Promise<Branch[]> {
    return ids.length === 0 ? Promise.resolve([]) : this.db.getRepository(Branch).findBy({ id: In(ids) });
  }

  /**
   * Inserts or updates the branches in one transaction, with what `then` writes after them in it
   * (BranchesService: the visits of branches moved to another brand, or renamed), told the ids of
   * the branches of the client that were stored with another name or code.
   */
  async upsertMany(branches: Branch[], then: (tx: EntityManager, renamed: ReadonlySet<string>) => Promise<void> = () => Promise.resolve()): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      // The clients' rows first, as every writer takes them (a visits import waited for a branch
      // this import held while it waited for the client's row: a deadlock on PostgreSQL).
      await lockClients(tx, branches.map((b) => b.clientId));
      // A branch stored as it is given is not written again: an import of what is stored moves no version.
      const stored = await this.storedOf(tx, branches);
      const changed = branches.filter((b) => {
        const row = stored.get(b.id);
        return !row || row.clientId !== b.clientId || row.brandId !== b.brandId || row.name !== b.name || row.branchCode !== b.branchCode;
      });
      if (changed.length > 0) {
        await bumpDataVersion(tx, changed.map((b) => b.clientId));
        await upsertRows(tx, Branch, changed, ['id'], { sameOwner: 'clientId', statementRows: 500 });
      }
      const renamed = changed.filter((b) => {
        const row = stored.get(b.id);
        return row !== undefined && row.clientId === b.clientId && (row.name !== b.name || row.branchCode !== b.branchCode);
      });
      await then(tx, new Set(renamed.map((b) => b.id)));
    });
  }

  /** The branches stored with the ids of `branches`, by id. */
  private async storedOf(tx: EntityManager, branches: Branch[]): Promise<Map<string, Branch>> {
    const stored = new Map<string, Branch>();
    for (let i = 0; i < branches.length; i += 500) {
      const rows = await tx.getRepository(Branch).findBy({ id: In(branches.slice(i, i + 500).map((b) => b.id)) });
      for (const row of rows) stored.set(row.id, row);
    }
    return stored;
  }
}
