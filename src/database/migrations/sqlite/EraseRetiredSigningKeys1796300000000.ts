import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Erases the private part of every signing key retired before a retirement erased it
 * (AuthRepository.retireSigningKey): those keys signed tokens, and stayed, sealed, in the table
 * and in every backup taken since. Their id, public key and dates stay for `signing-keys list`.
 * No release reads a retired key's private part, so replicas of the release before keep serving.
 */
export class EraseRetiredSigningKeys1796300000000 implements MigrationInterface {
  name = 'EraseRetiredSigningKeys1796300000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE "signing_keys" SET "private_key" = '' WHERE "retired_at" IS NOT NULL AND "private_key" <> ''`);
  }

  async down(): Promise<void> {
    // What was erased is gone: the keys stay retired, as they were.
  }
}
