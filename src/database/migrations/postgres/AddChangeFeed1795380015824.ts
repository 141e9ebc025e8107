import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The change feed: a per-client write sequence on every visit, and the time of its last write.
 * Visits already stored get sequences in their current order (modificationDate, then id) and
 * the migration's time as their write time, so a feed started from any earlier point sees them.
 * The indexes are built after the backfill, in the migration's transaction.
 */
export class AddChangeFeed1795380015824 implements MigrationInterface {
  name = 'AddChangeFeed1795380015824';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "clients" ADD "change_seq" bigint NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "visits" ADD "change_seq" bigint NOT NULL DEFAULT '0'`);
    await queryRunner.query(`ALTER TABLE "visits" ADD "changed_at" TIMESTAMP WITH TIME ZONE`);
    await queryRunner.query(
      `UPDATE "visits" v SET "change_seq" = r.n, "changed_at" = now()
       FROM (SELECT "id", row_number() OVER (PARTITION BY "client_id" ORDER BY "modification_date", "id") AS n FROM "visits") r
       WHERE r."id" = v."id"`,
    );
    await queryRunner.query(
      `UPDATE "clients" c SET "change_seq" = m.s
       FROM (SELECT "client_id", max("change_seq") AS s FROM "visits" GROUP BY "client_id") m
       WHERE m."client_id" = c."id"`,
    );
    await queryRunner.query(`CREATE INDEX "ix_visits_client_changed_at" ON "visits"  ("client_id", "changed_at", "change_seq") `);
    await queryRunner.query(`CREATE INDEX "ix_visits_client_change" ON "visits"  ("client_id", "change_seq", "brand_id", "visit_type") `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_visits_client_change"`);
    await queryRunner.query(`DROP INDEX "ix_visits_client_changed_at"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP COLUMN "changed_at"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP COLUMN "change_seq"`);
    await queryRunner.query(`ALTER TABLE "clients" DROP COLUMN "change_seq"`);
  }
}
