import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Checks of the settings the stored rows depend on (SettingCheck), stored by the service's
 * start: a command run with another API_KEY_HASH_KEY refuses to write keys and secrets no
 * replica could use.
 */
export class AddSettingChecks1796200000000 implements MigrationInterface {
  name = 'AddSettingChecks1796200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "setting_checks" ("name" varchar(50) PRIMARY KEY NOT NULL, "value" varchar(100) NOT NULL)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE "setting_checks"`);
  }
}
