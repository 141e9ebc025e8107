import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Checks of the settings the stored rows depend on (SettingCheck), stored by the service's
 * start: a command run with another API_KEY_HASH_KEY refuses to write keys and secrets no
 * replica could use.
 */
export class AddSettingChecks1796200000001 implements MigrationInterface {
  name = 'AddSettingChecks1796200000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "setting_checks" ("name" character varying(50) NOT NULL, "value" character varying(100) NOT NULL, CONSTRAINT "PK_812bd0af903eae57805b742cda3" PRIMARY KEY ("name"))`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "setting_checks"`);
  }
}
