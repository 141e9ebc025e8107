import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, type EntityManager } from 'typeorm';
import { Branch } from './entities/branch.entity.js';
import { bumpDataVersion } from '../clients/data-version.js';
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

  /** Inserts or updates the branches in one transaction, with what `then` writes after them in it (BranchesService: the visits of branches moved to another brand). */
  async upsertMany(branches: Branch[], then: (tx: EntityManager) => Promise<void> = () => Promise.resolve()): Promise<void> {
    await inTransaction(this.db, async (tx) => {
      // The clients' rows first, as every writer takes them (a visits import waited for a branch
      // this import held while it waited for the client's row: a deadlock on PostgreSQL).
      await bumpDataVersion(tx, branches.map((b) => b.clientId));
      await upsertRows(tx, Branch, branches, ['id'], { sameOwner: 'clientId', statementRows: 500 });
      await then(tx);
    });
  }
}
