import type { MigrationInterface, QueryRunner } from 'typeorm';

export class CoveringPageIndex1795350180093 implements MigrationInterface {
  name = 'CoveringPageIndex1795350180093';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_visits_client_time"`);
    await queryRunner.query(`CREATE INDEX "ix_visits_client_time" ON "visits" ("client_id", "visit_date_time", "id", "brand_id", "visit_type")`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_visits_client_time"`);
    await queryRunner.query(`CREATE INDEX "ix_visits_client_time" ON "visits" ("client_id", "visit_date_time", "id")`);
  }
}
