import type { MigrationInterface, QueryRunner } from 'typeorm';
import { backfillVisitDocuments } from '../visit-documents-backfill.js';

/** Each visit's response JSON, rendered once (see VisitDocument); the visits already stored are rendered here. */
export class AddVisitDocuments1795390470740 implements MigrationInterface {
  name = 'AddVisitDocuments1795390470740';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "visit_documents" ("visit_id" bigint PRIMARY KEY NOT NULL, "branch_id" varchar(64) NOT NULL, "standard" blob NOT NULL, "plus" blob NOT NULL, CONSTRAINT "fk_visit_documents_visit" FOREIGN KEY ("visit_id") REFERENCES "visits" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`,
    );
    await backfillVisitDocuments(queryRunner, false);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "visit_documents"`);
  }
}
