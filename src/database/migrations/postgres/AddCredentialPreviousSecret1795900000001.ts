import type { MigrationInterface, QueryRunner } from 'typeorm';

/** A credential's secret before its last rotation, and until when it still authenticates (both null: none). */
export class AddCredentialPreviousSecret1795900000001 implements MigrationInterface {
  name = 'AddCredentialPreviousSecret1795900000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "credentials" ADD "previous_secret_hash" character varying(200)`);
    await queryRunner.query(`ALTER TABLE "credentials" ADD "previous_secret_until" TIMESTAMP WITH TIME ZONE`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "credentials" DROP COLUMN "previous_secret_until"`);
    await queryRunner.query(`ALTER TABLE "credentials" DROP COLUMN "previous_secret_hash"`);
  }
}
