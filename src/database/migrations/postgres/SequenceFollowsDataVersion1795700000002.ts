import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Microseconds since 1970 by the server's clock. */
const CLOCK_US = '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint';

/**
 * Each client's write sequence becomes its data version (readers go by it, and the
 * announcement carries it: AnnounceWriteSequence): it is moved to the clock now, past every
 * data_version a page's ETag was made with before, so that no ETag a partner holds names other
 * data after the upgrade; and whenever data_version moves, the sequence moves past the clock
 * too, before the announcement: a writer of the release before this one (during a rollout)
 * moves data_version alone, or numbers on from a sequence a restore took back.
 */
export class SequenceFollowsDataVersion1795700000002 implements MigrationInterface {
  name = 'SequenceFollowsDataVersion1795700000002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`UPDATE "clients" SET "change_seq" = GREATEST("change_seq", ${CLOCK_US})`);
    // OR REPLACE, IF EXISTS: a restore of a backup from before this migration (pg_restore --clean)
    // drops the table and its trigger but leaves the function, and the migration runs again.
    await queryRunner.query(`CREATE OR REPLACE FUNCTION "sequence_follows_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_seq := GREATEST(NEW.change_seq, OLD.change_seq + 1, ${CLOCK_US});
  RETURN NEW;
END
$$`);
    await queryRunner.query(`DROP TRIGGER IF EXISTS "clients_sequence_follows_data_version" ON "clients"`);
    await queryRunner.query(
      `CREATE TRIGGER "clients_sequence_follows_data_version" BEFORE UPDATE OF "data_version" ON "clients" FOR EACH ROW ` +
        `WHEN (OLD.data_version IS DISTINCT FROM NEW.data_version) EXECUTE FUNCTION "sequence_follows_data_version"()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "clients_sequence_follows_data_version" ON "clients"`);
    await queryRunner.query(`DROP FUNCTION "sequence_follows_data_version"()`);
  }
}
