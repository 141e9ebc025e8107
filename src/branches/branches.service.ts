import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import type { EffectiveSelection } from '../auth/entitlements.js';
import { ClientsService } from '../clients/clients.service.js';
import { inFileOrder, rejectedAt, type ImportReport, type RecordPlace } from '../common/import-report.js';
import { readAllRecords } from '../common/record-file.js';
import { RecordReader } from '../common/record-reader.js';
import { BranchesRepository } from './branches.repository.js';
import { Branch } from './entities/branch.entity.js';

/** A branch as an import writes it: its visits are to have its brand (null: none); `renamed`: its name or code is not the one stored before. */
export interface BranchBrand {
  clientId: number;
  branchId: string;
  brandId: number | null;
  renamed: boolean;
}

/**
 * What follows the branches an import wrote, in the import's transaction, after the client's
 * row is locked (the visits' own rules live with them: each visit of a branch whose brand is
 * not the branch's takes it). A visit's brand is always its branch's: otherwise the visits of a
 * branch moved to another brand would stay with the credentials of its old brand, and those of
 * the new brand would list the branch without them. A branch renamed (or given another code)
 * has its visits written again too: they show its name, and the change feed brings them.
 */
export type FollowBranchBrands = (tx: EntityManager, branches: readonly BranchBrand[]) => Promise<void>;

@Injectable()
export class BranchesService {
  private followBrands: FollowBranchBrands = () => Promise.resolve();

  constructor(
    private readonly repo: BranchesRepository,
    private readonly clients: ClientsService,
  ) {}

  /** The client of each of these branch ids that a branch has here. */
  async clientsOf(ids: string[]): Promise<Map<string, number>> {
    return new Map((await this.repo.findByIds(ids)).map((branch) => [branch.id, branch.clientId]));
  }

  /** Sets what follows the branches each import writes (the visits feature, which this one cannot depend on), as ClientsService.followRenames. */
  followBranchWrites(follow: FollowBranchBrands): void {
    this.followBrands = follow;
  }

  /** The client's branches a credential may read: those of its entitled brands (all when unrestricted). */
  list(entitled: EffectiveSelection): Promise<Pick<Branch, 'id' | 'name' | 'branchCode'>[]> {
    return this.repo.list(entitled.clientId, entitled.brandIds);
  }

  /** The branches with these ids (any client's): what a visits import checks its visits against. */
  findByIds(ids: string[]): Promise<Branch[]> {
    return this.repo.findByIds(ids);
  }

  /**
   * Imports a client's branches (JSON array, NDJSON or CSV with id, name, branchCode,
   * brandId). Valid records are written together; each invalid one is reported by line. A
   * branch given another brand takes its visits along (see followBranchWrites), in the same transaction:
   * the visits are compared with the branch as written, under the lock every writer of the
   * client takes first, so two imports at once cannot leave them behind (nor can a branch
   * moved by an earlier release, whose visits a re-import brings along).
   */
  async importFile(clientId: number, path: string): Promise<ImportReport> {
    await this.clients.requireClient(clientId);
    const brandIds = new Set((await this.clients.listBrands(clientId)).map((b) => b.id));
    const report: ImportReport = { file: path, imported: 0, rejected: [] };
    const records = await readAllRecords(path, { columns: ['id', 'name', 'branchCode', 'brandId'] });
    // Each record read first; only the ids of readable ones reach the database.
    const read: { place: RecordPlace; reader: RecordReader; branch: Branch | null }[] = [];
    for (const record of records) {
      if (record.error !== undefined) {
        report.rejected.push(rejectedAt(record, [record.error]));
        continue;
      }
      const r = new RecordReader(record.value, { textValues: record.text });
      const id = r.string('id', { max: 64 });
      const name = r.string('name', { max: 200 });
      const branchCode = r.string('branchCode', { max: 100, required: false });
      const brandId = r.id('brandId', { required: false });
      if (brandId !== null && !brandIds.has(brandId)) r.errors.push(`'brandId' ${brandId} is not a brand of client ${clientId}.`);
      const branch = id === null || name === null ? null : Object.assign(new Branch(), { id, clientId, name, branchCode, brandId });
      read.push({ place: record, reader: r, branch });
    }
    const existing = new Map<string, Branch>();
    for (const branch of await this.repo.findByIds(read.flatMap((e) => (e.branch ? [e.branch.id] : [])))) existing.set(branch.id, branch);
    const seen = new Set<string>();
    const valid: Branch[] = [];
    for (const { place, reader: r, branch } of read) {
      if (branch) {
        const other = existing.get(branch.id);
        if (other && other.clientId !== clientId) r.errors.push(`branch '${branch.id}' belongs to client ${other.clientId}.`);
        if (seen.has(branch.id)) r.errors.push(`branch '${branch.id}' appears more than once in the file.`);
        seen.add(branch.id);
      }
      if (!r.ok || branch === null) {
        report.rejected.push(rejectedAt(place, r.errors));
        continue;
      }
      valid.push(branch);
    }
    report.rejected.sort(inFileOrder);
    await this.repo.upsertMany(valid, (tx, renamed) =>
      this.followBrands(tx, valid.map((b) => ({ clientId, branchId: b.id, brandId: b.brandId, renamed: renamed.has(b.id) }))),
    );
    report.imported = valid.length;
    return report;
  }
}
