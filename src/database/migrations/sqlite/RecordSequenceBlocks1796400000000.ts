import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Microseconds since 1970 by SQLite's clock, as an integer. */
const CLOCK_US = "CAST(ROUND((julianday('now') - 2440587.5) * 86400000000) AS INTEGER)";

/** How far back blocks are kept, in sequence numbers (microseconds): 400 days. */
const KEPT_US = 400 * 86_400 * 1_000_000;

/**
 * The blocks of write sequence numbers each move of a client's data version took
 * (SequenceBlock), recorded by the trigger that moves the sequence past the clock
 * (SequenceFollowsDataVersion), which now also records the block: the numbers from the
 * sequence before the write's own move (NEW: by as many as it wrote visits, or none) to the
 * number the trigger settled on. Blocks more than KEPT_US before the newest, and any past the
 * sequence before the write, are removed with each new one; each client's sequence as the
 * migration finds it is a block of its own. A change-feed token naming a
 * number between two blocks was given out before a restore from an earlier backup (see
 * VisitsRepository.gaveOutFeedPosition).
 */
export class RecordSequenceBlocks1796400000000 implements MigrationInterface {
  name = 'RecordSequenceBlocks1796400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(
      `CREATE TABLE "sequence_blocks" ("client_id" integer NOT NULL, "last_seq" bigint NOT NULL, "first_seq" bigint NOT NULL, PRIMARY KEY ("client_id", "last_seq"))`,
    );
    await queryRunner.query(`DROP TRIGGER IF EXISTS "clients_sequence_follows_data_version"`);
    // The sequence's move is made whatever the writer set it to (MAX keeps a number already past
    // both the clock and the one before); the block ends at the number it settled on, and holds
    // as many numbers as the writer moved it by (one at least: a change of names takes one).
    // Blocks past the sequence before the write were taken back with it (the clients' rows of
    // a backup restored without this table, a sequence set back by hand): they go, as do the
    // oldest.
    await queryRunner.query(
      `CREATE TRIGGER "clients_sequence_follows_data_version" AFTER UPDATE OF "data_version" ON "clients" ` +
        `WHEN NEW."data_version" <> OLD."data_version" BEGIN ` +
        `UPDATE "clients" SET "change_seq" = MAX("change_seq", OLD."change_seq" + 1, ${CLOCK_US}) WHERE "id" = NEW."id"; ` +
        // Two statements, each a range of the primary key: as one with OR, SQLite read every
        // block of the client at every write (some 50 ms a write with a year of them).
        `DELETE FROM "sequence_blocks" WHERE "client_id" = NEW."id" AND "last_seq" > OLD."change_seq"; ` +
        `DELETE FROM "sequence_blocks" WHERE "client_id" = NEW."id" AND "last_seq" < (SELECT "change_seq" FROM "clients" WHERE "id" = NEW."id") - ${KEPT_US}; ` +
        `INSERT INTO "sequence_blocks" ("client_id", "last_seq", "first_seq") ` +
        `SELECT "id", "change_seq", "change_seq" - MAX(NEW."change_seq" - OLD."change_seq", 1) + 1 FROM "clients" WHERE "id" = NEW."id"; ` +
        `END`,
    );
    // Each client's sequence as it stands is a block: a token of a write after this one lies
    // past it, so a backup holding no write of the client since (taken before this migration,
    // or before the client's first write after it) still tells it from the positions it gave.
    await queryRunner.query(`INSERT INTO "sequence_blocks" ("client_id", "last_seq", "first_seq") SELECT "id", "change_seq", "change_seq" FROM "clients"`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "clients_sequence_follows_data_version"`);
    await queryRunner.query(
      `CREATE TRIGGER "clients_sequence_follows_data_version" AFTER UPDATE OF "data_version" ON "clients" ` +
        `WHEN NEW."data_version" <> OLD."data_version" AND (NEW."change_seq" = OLD."change_seq" OR NEW."change_seq" < ${CLOCK_US}) ` +
        `BEGIN UPDATE "clients" SET "change_seq" = MAX("change_seq", OLD."change_seq" + 1, ${CLOCK_US}) WHERE "id" = NEW."id"; END`,
    );
    await queryRunner.query(`DROP TABLE "sequence_blocks"`);
  }
}
