import type { MigrationInterface, QueryRunner } from 'typeorm';

/** When each signing key begins to sign: the keys there are signed from their creation. */
export class AddSigningKeySignsFrom1795800000001 implements MigrationInterface {
  name = 'AddSigningKeySignsFrom1795800000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "signing_keys" ADD "signs_from" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(`UPDATE "signing_keys" SET "signs_from" = "created_at"`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "signing_keys" DROP COLUMN "signs_from"`);
  }
}
