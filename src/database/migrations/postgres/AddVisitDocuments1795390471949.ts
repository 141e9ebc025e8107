import type { MigrationInterface, QueryRunner } from 'typeorm';
import { backfillVisitDocuments } from '../visit-documents-backfill.js';

/** Each visit's response JSON, rendered once (see VisitDocument); the visits already stored are rendered here. */
export class AddVisitDocuments1795390471949 implements MigrationInterface {
  name = 'AddVisitDocuments1795390471949';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "visit_documents" ("visit_id" bigint NOT NULL, "branch_id" character varying(64) NOT NULL, "standard" bytea NOT NULL, "plus" bytea NOT NULL, CONSTRAINT "PK_fd85513d6daa444409c5ccdde43" PRIMARY KEY ("visit_id"))`);
    await queryRunner.query(`ALTER TABLE "visit_documents" ADD CONSTRAINT "fk_visit_documents_visit" FOREIGN KEY ("visit_id") REFERENCES "visits"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await backfillVisitDocuments(queryRunner, true);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "visit_documents" DROP CONSTRAINT "fk_visit_documents_visit"`);
    await queryRunner.query(`DROP TABLE "visit_documents"`);
  }
}
