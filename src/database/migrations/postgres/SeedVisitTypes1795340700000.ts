import type { MigrationInterface, QueryRunner } from 'typeorm';

/** The visit types of docs/decisions.md (MV, OF, TA); the operator may add more. */
export class SeedVisitTypes1795340700000 implements MigrationInterface {
  name = 'SeedVisitTypes1795340700000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `INSERT INTO "visit_types" ("code", "name") VALUES ('MV', 'Mystery visit'), ('OF', 'Online feedback survey'), ('TA', 'Third-party review')`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM "visit_types" WHERE "code" IN ('MV', 'OF', 'TA')`);
  }
}
