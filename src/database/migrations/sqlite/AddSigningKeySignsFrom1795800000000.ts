import type { MigrationInterface, QueryRunner } from 'typeorm';

/** When each signing key begins to sign: the keys there are signed from their creation. */
export class AddSigningKeySignsFrom1795800000000 implements MigrationInterface {
  name = 'AddSigningKeySignsFrom1795800000000';

  // Added in place, as the generator's rebuild of the table is not needed for a nullable column.
  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "signing_keys" ADD COLUMN "signs_from" datetime`);
    await queryRunner.query(`UPDATE "signing_keys" SET "signs_from" = "created_at"`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "signing_keys" DROP COLUMN "signs_from"`);
  }
}
