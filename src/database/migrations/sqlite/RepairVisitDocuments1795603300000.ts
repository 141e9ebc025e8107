import type { MigrationInterface, QueryRunner } from 'typeorm';
import { repairVisitDocuments } from '../visit-documents-backfill.js';

/** Visit documents that earlier releases wrote under the wrong visits, written again from the visits (see repairVisitDocuments). */
export class RepairVisitDocuments1795603300000 implements MigrationInterface {
  name = 'RepairVisitDocuments1795603300000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await repairVisitDocuments(queryRunner, false);
  }

  async down(): Promise<void> {
    // Nothing to undo: the documents written are those the visits render.
  }
}
