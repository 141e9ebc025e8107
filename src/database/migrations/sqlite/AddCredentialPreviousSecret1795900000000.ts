import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A credential's secret before its last rotation, and until when it still authenticates (both null: none). */
export class AddCredentialPreviousSecret1795900000000 implements MigrationInterface {
  name = 'AddCredentialPreviousSecret1795900000000';

  // Added in place, as the generator's rebuild of the table is not needed for nullable columns.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "credentials" ADD COLUMN "previous_secret_hash" varchar(200)`);
    await queryRunner.query(`ALTER TABLE "credentials" ADD COLUMN "previous_secret_until" datetime`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "credentials" DROP COLUMN "previous_secret_until"`);
    await queryRunner.query(`ALTER TABLE "credentials" DROP COLUMN "previous_secret_hash"`);
  }
}
