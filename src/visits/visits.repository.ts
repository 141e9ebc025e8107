import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In } from 'typeorm';
import { VisitType } from './entities/visit-type.entity.js';
import { Visit } from './entities/visit.entity.js';

/** What an import compares to decide whether a re-imported visit changed. */
export type StoredVisit = Pick<Visit, 'id' | 'clientId' | 'modificationDate'> & { fingerprint: string };

export const VISIT_UPSERT_COLUMNS: (keyof Visit)[] = [
  'clientId',
  'brandId',
  'branchId',
  'visitType',
  'questionnaireType',
  'visitScore',
  'recommendScore',
  'recommendComment',
  'visitDate',
  'visitDateTime',
  'modificationDate',
  'visitSource',
  'sections',
  'guestId',
  'optInContactByEmail',
  'optInJoinMarketing',
  'completedAt',
];

/** The fields whose change moves a visit's modificationDate. */
export function visitFingerprint(v: Omit<Visit, 'modificationDate' | 'id' | 'completedAt'>): string {
  return JSON.stringify([
    v.clientId,
    v.brandId,
    v.branchId,
    v.visitType,
    v.questionnaireType,
    v.visitScore,
    v.recommendScore,
    v.recommendComment,
    v.visitDateTime,
    v.visitSource,
    v.sections,
    v.guestId,
    v.optInContactByEmail,
    v.optInJoinMarketing,
  ]);
}

@Injectable()
export class VisitsRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  async visitTypeCodes(): Promise<Set<string>> {
    const rows = await this.db.getRepository(VisitType).find({ select: { code: true } });
    return new Set(rows.map((r) => r.code));
  }

  async findStored(ids: number[]): Promise<Map<number, StoredVisit>> {
    const found = new Map<number, StoredVisit>();
    if (ids.length === 0) return found;
    const rows = await this.db.getRepository(Visit).findBy({ id: In(ids) });
    for (const row of rows) found.set(row.id, { ...row, fingerprint: visitFingerprint(row) });
    return found;
  }

  /** Inserts or replaces the visits of one batch in one transaction. */
  async upsertBatch(visits: Visit[]): Promise<void> {
    if (visits.length === 0) return;
    await this.db.transaction(async (tx) => {
      for (let i = 0; i < visits.length; i += 200) {
        await tx.getRepository(Visit).upsert(visits.slice(i, i + 200), {
          conflictPaths: ['id'],
          skipUpdateIfNoValuesChanged: false,
        });
      }
    });
  }

  count(): Promise<number> {
    return this.db.getRepository(Visit).count();
  }
}
