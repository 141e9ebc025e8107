import { Injectable, type OnModuleInit } from '@nestjs/common';
import { VisitTypeCatalogue } from '../auth/visit-type-catalogue.js';
import type { EntityManager } from 'typeorm';
import { BranchesService, type BranchBrand } from '../branches/branches.service.js';
import { ClientsService, type Renamed } from '../clients/clients.service.js';
import { localDateTime } from '../common/clock.js';
import { ImportInterrupted, inFileOrder, rejectedAt, type ImportReport, type RecordPlace } from '../common/import-report.js';
import { readRecords, type FileRecord } from '../common/record-file.js';
import { AppConfig } from '../config/app-config.js';
import type { Visit } from './entities/visit.entity.js';
import { readVisitRecord } from './visit-record.js';
import { visitFingerprint, VisitsRepository, type StoredVisit } from './visits.repository.js';

const BATCH = 500;

/**
 * Imports visits from the survey platform. Upserts by visitId: a re-imported visit (an MV
 * visit under review) replaces the stored one and, when anything changed, moves its
 * modificationDate, so partners re-requesting recent days see the change.
 */
@Injectable()
export class VisitsImportService implements OnModuleInit {
  constructor(
    private readonly visits: VisitsRepository,
    private readonly branches: BranchesService,
    private readonly clients: ClientsService,
    private readonly config: AppConfig,
    private readonly visitTypes: VisitTypeCatalogue,
  ) {}

  /** The client of each of these visit ids that a visit has here, read 500 at a time (an import's batch). */
  async clientsOf(ids: number[]): Promise<Map<number, number>> {
    const found = new Map<number, number>();
    for (let at = 0; at < ids.length; at += 500) {
      for (const [id, visit] of await this.visits.findStored(ids.slice(at, at + 500))) found.set(id, visit.clientId);
    }
    return found;
  }

  /** The visits follow what the clients' and branches' writes change of them: a rename, a branch moved to another brand. */
  onModuleInit(): void {
    this.clients.followRenames((tx, renamed) => this.followRename(tx, renamed));
    this.branches.followBranchWrites((tx, written) => this.followBranchBrands(tx, written));
  }

  /**
   * Imports the file in batches of 500, each in a transaction of its own. `stopRequested` is
   * asked between batches: when it gives a reason, the import stops there (ImportInterrupted,
   * with what was written), as it does when a batch fails after others were written.
   */
  async importFile(path: string, stopRequested: () => string | null = () => null): Promise<ImportReport> {
    const report: ImportReport = { file: path, imported: 0, rejected: [] };
    const context = await this.loadContext(await repeatedVisits(path));
    let batch: FileRecord[] = [];
    // Each batch is a transaction of its own: one that fails after others were written says so.
    const write = async (): Promise<void> => {
      try {
        await this.importBatch(batch, context, report);
      } catch (error) {
        if (batch.length === 0) throw error;
        throw new ImportInterrupted(report, batch[0].line, error);
      }
      batch = [];
    };
    for await (const record of readRecords(path)) {
      const reason = batch.length === 0 ? stopRequested() : null;
      if (reason !== null) throw new ImportInterrupted(report, record.line, new Error(reason));
      batch.push(record);
      if (batch.length >= BATCH) await write();
    }
    await write();
    return report;
  }

  /**
   * Brings the visits of the branches a branch import wrote to their branch's brand, in that
   * import's transaction: each visit of another brand takes the branch's, a later
   * modificationDate (its brandName changed) and a new place on the change feed, where a feed
   * of its old brand reports it removed, as when a re-import moves a visit. The ids are found
   * in one query per branch (for a branch whose visits all have its brand, that is all), then
   * the visits read and written in batches of BATCH.
   */
  async followBranchBrands(tx: EntityManager, branches: readonly BranchBrand[]): Promise<void> {
    for (const branch of branches) {
      // A branch renamed: all its visits (they show its name and code); else those of another brand.
      const ids = branch.renamed
        ? await this.visits.visitIdsOf(tx, { clientId: branch.clientId, branchId: branch.branchId })
        : await this.visits.branchVisitIdsOffBrand(tx, branch);
      await this.writeAgain(tx, ids, (visit) => {
        visit.brandId = branch.brandId;
      });
    }
  }

  /**
   * Writes the visits of a client or brand renamed again, in the rename's transaction (the
   * client's row locked): each shows the name, so it takes a later modificationDate and a new
   * place on the change feed, and webhooks announce it, as when a re-import changes it.
   */
  async followRename(tx: EntityManager, renamed: Renamed): Promise<void> {
    await this.writeAgain(tx, await this.visits.visitIdsOf(tx, renamed), () => undefined);
  }

  /** Writes the visits of these ids again in batches of BATCH, each changed by `change` and given a later modificationDate. */
  private async writeAgain(tx: EntityManager, ids: readonly number[], change: (visit: Visit) => void): Promise<void> {
    // Nothing to write: no time to read (on PostgreSQL a round trip, which a branches import
    // asks for each branch of its file, moved or not).
    if (ids.length === 0) return;
    const at = await this.visits.writeTime(tx);
    const now = localDateTime(this.config.RESULTS_TIMEZONE, at);
    for (let i = 0; i < ids.length; i += BATCH) {
      const visits = await this.visits.visitsById(tx, ids.slice(i, i + BATCH));
      for (const visit of visits) {
        const stored = visit.modificationDate;
        change(visit);
        visit.modificationDate = laterModificationDate(stored, now);
      }
      await this.visits.writeBatch(tx, visits, at);
    }
  }

  private async loadContext(lastRecords: Map<number, number>): Promise<ImportContext> {
    return {
      visitTypes: await this.visitTypes.codes(),
      clients: new Set((await this.clients.listClients()).map((c) => c.id)),
      brandClients: new Map<number, number | null>(),
      lastRecords,
      held: new Map<number, { visit: Visit; given: boolean }>(),
      nextRecord: 0,
    };
  }

  private async brandClient(context: ImportContext, brandId: number): Promise<number | null> {
    if (!context.brandClients.has(brandId)) {
      const brand = await this.clients.findBrand(brandId);
      context.brandClients.set(brandId, brand?.clientId ?? null);
    }
    return context.brandClients.get(brandId) ?? null;
  }

  private async importBatch(batch: FileRecord[], context: ImportContext, report: ImportReport): Promise<void> {
    if (batch.length === 0) return;
    const firstRejected = report.rejected.length;
    const parsed: { place: RecordPlace; ordinal: number; visit: Visit; hasModificationDate: boolean }[] = [];
    for (const record of batch) {
      const ordinal = context.nextRecord++;
      if (record.error !== undefined) {
        report.rejected.push(rejectedAt(record, [record.error]));
        continue;
      }
      const { record: visit, errors } = readVisitRecord(record.value, record.text);
      if (!visit) report.rejected.push(rejectedAt(record, errors));
      else parsed.push({ place: record, ordinal, ...visit });
    }

    const branches = new Map(
      (await this.branches.findByIds([...new Set(parsed.map((p) => p.visit.branchId))])).map((b) => [b.id, b]),
    );
    // The rules that do not depend on the visit as stored, checked before the write.
    const checked: { place: RecordPlace; ordinal: number; visit: Visit; hasModificationDate: boolean; errors: string[] }[] = [];
    for (const { place, ordinal, visit, hasModificationDate } of parsed) {
      const errors: string[] = [];
      if (!context.clients.has(visit.clientId)) errors.push(`'clientId' ${visit.clientId} is not a known client.`);
      if (!context.visitTypes.has(visit.visitType)) errors.push(`'visitType' '${visit.visitType}' is not a known visit type.`);
      const branch = branches.get(visit.branchId);
      if (!branch) errors.push(`'branchId' '${visit.branchId}' is not a known branch; import branches first.`);
      else if (branch.clientId !== visit.clientId) errors.push(`'branchId' '${visit.branchId}' belongs to client ${branch.clientId}.`);
      // A visit without a brand takes its branch's; not from a branch of another client (its
      // brand would be refused as if the record had named it, and named to this client).
      if (visit.brandId === null && branch && branch.clientId === visit.clientId) visit.brandId = branch.brandId;
      if (visit.brandId !== null) {
        const owner = await this.brandClient(context, visit.brandId);
        if (owner !== visit.clientId) errors.push(`'brandId' ${visit.brandId} is not a brand of client ${visit.clientId}.`);
        // A visit of another brand than its branch's would show that branch to credentials of that brand.
        // A brand on a visit of a branch without one would show that branch to credentials of
        // the brand, which /branches does not list for them.
        else if (branch && branch.clientId === visit.clientId && branch.brandId !== visit.brandId) {
          errors.push(`'brandId' ${visit.brandId} is not the brand of branch '${visit.branchId}' (${branch.brandId ?? 'it has none'}).`);
        }
      }
      checked.push({ place, ordinal, visit, hasModificationDate, errors });
    }

    let acceptedRecords = 0;
    // The rest is weighed against the visits as stored under the clients' locks, in the write's
    // transaction: what another writer wrote meanwhile is what a change is compared with.
    const settle = (stored: Map<number, StoredVisit>, at: Date): Visit[] => {
      // The database's clock on PostgreSQL (VisitsRepository.writeTime): a writer whose clock is behind does not date a change before ones written earlier.
      const now = localDateTime(this.config.RESULTS_TIMEZONE, at);
      /** The visits to write, by id: accepted and changed. */
      const accepted = new Map<number, Visit>();
      for (const { place, ordinal, visit, hasModificationDate, errors } of checked) {
        const last = context.lastRecords.get(visit.id);
        const previous = stored.get(visit.id);
        if (previous && previous.clientId !== visit.clientId) errors.push(`visit ${visit.id} belongs to client ${previous.clientId}.`);
        if (errors.length > 0) {
          report.rejected.push(rejectedAt(place, errors));
          // The visit's last record refused: an earlier one accepted is what the file leaves,
          // weighed against the visit as stored now.
          const held = ordinal === last ? context.held.get(visit.id) : undefined;
          if (held !== undefined) {
            context.held.delete(visit.id);
            const before = previous && previous.clientId === held.visit.clientId ? previous : undefined;
            if (before === undefined || visitFingerprint(held.visit) !== before.fingerprint) {
              held.visit.modificationDate = modificationDateOf(held.visit, held.given, before, now);
              accepted.set(visit.id, held.visit);
            }
          }
          continue;
        }
        acceptedRecords++;
        // A visit twice in a file is written once, as its last accepted record says, compared with
        // what is stored when it is written, wherever the batches of 500 happen to split the
        // file: an earlier record is held until the last one is read, never written first.
        if (last !== undefined && ordinal < last) {
          context.held.set(visit.id, { visit, given: hasModificationDate });
          continue;
        }
        context.held.delete(visit.id);
        // A visit re-imported as it is stays as it is: no write, no new place in the change feed.
        if (previous !== undefined && visitFingerprint(visit) === previous.fingerprint) continue;
        visit.modificationDate = modificationDateOf(visit, hasModificationDate, previous, now);
        accepted.set(visit.id, visit);
      }
      // Records refused when read, then those refused against the database: reported in line order.
      report.rejected.push(...report.rejected.splice(firstRejected).sort(inFileOrder));
      return [...accepted.values()];
    };
    // Every visit of the batch, so that each client it may write (a held record's whose last
    // record is refused too) is locked, in id order, before any is compared or written; a
    // client that does not exist has no row to lock.
    await this.visits.upsertBatch(checked.map((c) => c.visit), settle);
    report.imported += acceptedRecords;
  }

}

/**
 * A visit's modificationDate as written: a new visit keeps the one it carries (or now); a
 * changed re-import moves it forward, to the record's own when that is later, else to now (wall
 * clock in RESULTS_TIMEZONE), else a second past the stored one: in the hour clocks go back, now
 * reads earlier than a date written in the hour's first pass, and a change must still show.
 */
export function modificationDateOf(
  visit: Visit,
  given: boolean,
  previous: { modificationDate: string; fingerprint: string } | undefined,
  now: string,
): string {
  if (!previous) return given ? visit.modificationDate : now;
  if (visitFingerprint(visit) === previous.fingerprint) return previous.modificationDate;
  return laterModificationDate(previous.modificationDate, given && visit.modificationDate > previous.modificationDate ? visit.modificationDate : now);
}

/** A changed visit's modificationDate after `stored`: `candidate` when it is later, else a second after `stored`. */
function laterModificationDate(stored: string, candidate: string): string {
  return candidate > stored ? candidate : secondAfter(stored);
}

/** The wall-clock date-time a second after `local` (yyyy-mm-ddThh:mm:ss); the last second of 9999 stays. */
function secondAfter(local: string): string {
  const next = new Date(Date.parse(`${local}Z`) + 1000).toISOString();
  // Past the year 9999 the form is +010000-…: no yyyy-mm-dd date.
  return next.length === 24 ? next.slice(0, 19) : local;
}

interface ImportContext {
  visitTypes: ReadonlySet<string>;
  clients: Set<number>;
  brandClients: Map<number, number | null>;
  /** Of each visit given more than once in the file, the place (in record order) of its last record. */
  lastRecords: Map<number, number>;
  /** Earlier records of such visits, accepted and held until their last record is read; `given`: the record had a modificationDate. */
  held: Map<number, { visit: Visit; given: boolean }>;
  /** The place in record order of the next record read. */
  nextRecord: number;
}

/**
 * Of each visit the file gives more than once, the place of its last record (counting every
 * record, as the import reads them): a first pass over the file, so that a visit's records in
 * different batches are written once, as within one.
 */
async function repeatedVisits(path: string): Promise<Map<number, number>> {
  const seen = new Set<number>();
  const last = new Map<number, number>();
  let ordinal = 0;
  for await (const record of readRecords(path)) {
    const at = ordinal++;
    if (record.error !== undefined) continue;
    const id = readVisitRecord(record.value, record.text).record?.visit.id;
    if (id === undefined) continue;
    if (seen.has(id)) last.set(id, at);
    else seen.add(id);
  }
  return last;
}
