import type { MigrationInterface, QueryRunner } from 'typeorm';

export class AddClientDataVersion1795346320695 implements MigrationInterface {
  name = 'AddClientDataVersion1795346320695';

  // Added in place: rebuilding "clients" (what the generator writes for SQLite) would drop the
  // table its foreign keys cascade from.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "data_version" integer NOT NULL DEFAULT (0)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "data_version"`);
  }
}
