import type { MigrationInterface, QueryRunner } from 'typeorm';

export class AddClientDataVersion1795346322192 implements MigrationInterface {
  name = 'AddClientDataVersion1795346322192';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD "data_version" integer NOT NULL DEFAULT '0'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "data_version"`);
  }
}
