import { Injectable } from '@nestjs/common';
import { VisitTypeCatalogue } from '../auth/visit-type-catalogue.js';
import { BranchesService } from '../branches/branches.service.js';
import { ClientsService } from '../clients/clients.service.js';
import { localDateTime } from '../common/clock.js';
import { ImportInterrupted, inFileOrder, rejectedAt, type ImportReport, type RecordPlace } from '../common/import-report.js';
import { readRecords, type FileRecord } from '../common/record-file.js';
import { AppConfig } from '../config/app-config.js';
import type { Visit } from './entities/visit.entity.js';
import { readVisitRecord } from './visit-record.js';
import { visitFingerprint, VisitsRepository } from './visits.repository.js';

const BATCH = 500;

/**
 * Imports visits from the survey platform. Upserts by visitId: a re-imported visit (an MV
 * visit under review) replaces the stored one and, when anything changed, moves its
 * modificationDate, so partners re-requesting recent days see the change.
 */
@Injectable()
export class VisitsImportService {
  constructor(
    private readonly visits: VisitsRepository,
    private readonly branches: BranchesService,
    private readonly clients: ClientsService,
    private readonly config: AppConfig,
    private readonly visitTypes: VisitTypeCatalogue,
  ) {}

  async importFile(path: string): Promise<ImportReport> {
    const report: ImportReport = { file: path, imported: 0, rejected: [] };
    const context = await this.loadContext();
    let batch: FileRecord[] = [];
    // Each batch is a transaction of its own: one that fails after others were written says so.
    const write = async (): Promise<void> => {
      try {
        await this.importBatch(batch, context, report);
      } catch (error) {
        if (report.imported === 0 || batch.length === 0) throw error;
        throw new ImportInterrupted(report, batch[0].line, error);
      }
      batch = [];
    };
    for await (const record of readRecords(path)) {
      batch.push(record);
      if (batch.length >= BATCH) await write();
    }
    await write();
    return report;
  }

  private async loadContext(): Promise<ImportContext> {
    return {
      visitTypes: await this.visitTypes.codes(),
      clients: new Set((await this.clients.listClients()).map((c) => c.id)),
      brandClients: new Map<number, number | null>(),
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
    const parsed: { place: RecordPlace; visit: Visit; hasModificationDate: boolean }[] = [];
    for (const record of batch) {
      if (record.error !== undefined) {
        report.rejected.push(rejectedAt(record, [record.error]));
        continue;
      }
      const { record: visit, errors } = readVisitRecord(record.value, record.text);
      if (!visit) report.rejected.push(rejectedAt(record, errors));
      else parsed.push({ place: record, ...visit });
    }

    const branches = new Map(
      (await this.branches.findByIds([...new Set(parsed.map((p) => p.visit.branchId))])).map((b) => [b.id, b]),
    );
    const stored = await this.visits.findStored(parsed.map((p) => p.visit.id));
    const now = localDateTime(this.config.RESULTS_TIMEZONE);
    /** Accepted visits by id; null for those unchanged, which need no write. */
    const accepted = new Map<number, Visit | null>();
    let acceptedRecords = 0;

    for (const { place, visit, hasModificationDate } of parsed) {
      const errors: string[] = [];
      if (!context.clients.has(visit.clientId)) errors.push(`'clientId' ${visit.clientId} is not a known client.`);
      if (!context.visitTypes.has(visit.visitType)) errors.push(`'visitType' '${visit.visitType}' is not a known visit type.`);
      const branch = branches.get(visit.branchId);
      if (!branch) errors.push(`'branchId' '${visit.branchId}' is not a known branch; import branches first.`);
      else if (branch.clientId !== visit.clientId) errors.push(`'branchId' '${visit.branchId}' belongs to client ${branch.clientId}.`);
      if (visit.brandId === null && branch) visit.brandId = branch.brandId;
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
      const previous = stored.get(visit.id);
      if (previous && previous.clientId !== visit.clientId) errors.push(`visit ${visit.id} belongs to client ${previous.clientId}.`);
      if (errors.length > 0) {
        report.rejected.push(rejectedAt(place, errors));
        continue;
      }
      // A visit re-imported as it is stays as it is: no write, no new place in the change feed.
      const unchanged = previous !== undefined && visitFingerprint(visit) === previous.fingerprint;
      visit.modificationDate = this.modificationDate(visit, hasModificationDate, previous, now);
      // A visit twice in a file is written as its later record says, as two imports in file
      // order would leave it, wherever the batches of 500 happen to split the file.
      accepted.set(visit.id, unchanged ? null : visit);
      acceptedRecords++;
    }
    // Records refused when read, then those refused against the database: reported in line order.
    report.rejected.push(...report.rejected.splice(firstRejected).sort(inFileOrder));
    await this.visits.upsertBatch([...accepted.values()].filter((v): v is Visit => v !== null));
    report.imported += acceptedRecords;
  }

  /** New visits keep the date they carry; a changed re-import moves it forward, never back. */
  private modificationDate(
    visit: Visit,
    given: boolean,
    previous: { modificationDate: string; fingerprint: string } | undefined,
    now: string,
  ): string {
    if (!previous) return given ? visit.modificationDate : now;
    if (visitFingerprint(visit) === previous.fingerprint) return previous.modificationDate;
    const candidate = given && visit.modificationDate > previous.modificationDate ? visit.modificationDate : now;
    return candidate > previous.modificationDate ? candidate : previous.modificationDate;
  }
}

interface ImportContext {
  visitTypes: ReadonlySet<string>;
  clients: Set<number>;
  brandClients: Map<number, number | null>;
}
