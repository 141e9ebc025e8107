import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Microseconds since 1970 by SQLite's clock, as an integer. */
const CLOCK_US = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000000) AS INTEGER)";

/**
 * Each client's write sequence becomes its data version (readers go by it: ClientDataVersions):
 * it is moved to the clock now, past every data_version a page's ETag was made with before, so
 * that no ETag a partner holds names other data after the upgrade; and whenever data_version
 * moves, the sequence moves past the clock too: a writer of a release before this one moves
 * data_version alone, or numbers on from a sequence a restore took back.
 */
export class SequenceFollowsDataVersion1795700000001 implements MigrationInterface {
  name = 'SequenceFollowsDataVersion1795700000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE "clients" SET "change_seq" = MAX("change_seq", ${CLOCK_US})`);
    await queryRunner.query(`DROP TRIGGER IF EXISTS "clients_sequence_follows_data_version"`);
    await queryRunner.query(
      `CREATE TRIGGER "clients_sequence_follows_data_version" AFTER UPDATE OF "data_version" ON "clients" ` +
        `WHEN NEW."data_version" <> OLD."data_version" AND (NEW."change_seq" = OLD."change_seq" OR NEW."change_seq" < ${CLOCK_US}) ` +
        `BEGIN UPDATE "clients" SET "change_seq" = MAX("change_seq", OLD."change_seq" + 1, ${CLOCK_US}) WHERE "id" = NEW."id"; END`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "clients_sequence_follows_data_version"`);
  }
}
