import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The change feed: a per-client write sequence on every visit, and the time of its last write.
 * Visits already stored get sequences in their current order (modificationDate, then id) and
 * the migration's time as their write time, so a feed started from any earlier point sees them.
 * Columns are added in place: rebuilding "clients" (what the generator writes for SQLite) would
 * drop the table its foreign keys cascade from.
 */
export class AddChangeFeed1795380014383 implements MigrationInterface {
  name = 'AddChangeFeed1795380014383';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD COLUMN "change_seq" bigint NOT NULL DEFAULT (0)`);
    await queryRunner.query(`ALTER TABLE "visits" ADD COLUMN "change_seq" bigint NOT NULL DEFAULT (0)`);
    await queryRunner.query(`ALTER TABLE "visits" ADD COLUMN "changed_at" datetime`);
    await queryRunner.query(
      `UPDATE "visits" SET "change_seq" = r.n, "changed_at" = strftime('%Y-%m-%d %H:%M:%f', 'now')
       FROM (SELECT "id", ROW_NUMBER() OVER (PARTITION BY "client_id" ORDER BY "modification_date", "id") AS n FROM "visits") AS r
       WHERE r."id" = "visits"."id"`,
    );
    await queryRunner.query(
      `UPDATE "clients" SET "change_seq" = COALESCE((SELECT MAX("change_seq") FROM "visits" WHERE "client_id" = "clients"."id"), 0)`,
    );
    await queryRunner.query(`CREATE INDEX "ix_visits_client_changed_at" ON "visits" ("client_id", "changed_at", "change_seq") `);
    await queryRunner.query(`CREATE INDEX "ix_visits_client_change" ON "visits" ("client_id", "change_seq", "brand_id", "visit_type") `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_visits_client_change"`);
    await queryRunner.query(`DROP INDEX "ix_visits_client_changed_at"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP COLUMN "changed_at"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP COLUMN "change_seq"`);
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "change_seq"`);
  }
}
