import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Microseconds since 1970 by the server's clock. */
const CLOCK_US = '(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000)::bigint';

/** How far back blocks are kept, in sequence numbers (microseconds): 400 days. */
const KEPT_US = 400 * 86_400 * 1_000_000;

/**
 * The blocks of write sequence numbers each move of a client's data version took
 * (SequenceBlock), recorded by the trigger that moves the sequence past the clock
 * (SequenceFollowsDataVersion), which now also records the block: as many numbers as the
 * writer moved the sequence by (its visits; one at least), ending at the number the trigger
 * settled on. Blocks more than KEPT_US before the newest, and any past the sequence before the
 * write, are removed with each new one. Every writer's move goes through it, a replica's of the
 * release before during a rollout too. Each client's sequence as the migration finds it is
 * recorded as a block of its own. A change-feed token naming a number between two blocks
 * was given out before a restore from an earlier backup (see
 * VisitsRepository.gaveOutFeedPosition).
 *
 * The table is named in the trigger's own schema (TG_TABLE_SCHEMA): the writer's search_path
 * is not what resolves it.
 */
export class RecordSequenceBlocks1796400000001 implements MigrationInterface {
  name = 'RecordSequenceBlocks1796400000001';

  async up(queryRunner: QueryRunner): Promise<void> {
    // A backup from before this migration restored with pg_restore --clean over a later database
    // leaves this table (not in the backup) and its blocks of a state that is gone.
    await queryRunner.query(`DROP TABLE IF EXISTS "sequence_blocks"`);
    await queryRunner.query(
      `CREATE TABLE "sequence_blocks" ("client_id" integer NOT NULL, "last_seq" bigint NOT NULL, "first_seq" bigint NOT NULL, CONSTRAINT "PK_fcd22d9d987739f3b7f8e8b45cc" PRIMARY KEY ("client_id", "last_seq"))`,
    );
    // No writer between the sequences read below and the commit: a write committed in between
    // would have numbers past the block recorded for its client, and none of its own.
    await queryRunner.query(`LOCK TABLE "clients" IN SHARE MODE`);
    await queryRunner.query(`CREATE OR REPLACE FUNCTION "sequence_follows_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  taken bigint := GREATEST(NEW.change_seq - OLD.change_seq, 1);
BEGIN
  NEW.change_seq := GREATEST(NEW.change_seq, OLD.change_seq + 1, ${CLOCK_US});
  -- Blocks past the sequence before the write were taken back with it (the clients' rows of a
  -- backup restored without this table, a sequence set back by hand): they go, as do the oldest.
  EXECUTE format('DELETE FROM %I.sequence_blocks WHERE client_id = $1 AND (last_seq > $2 OR last_seq < $3)', TG_TABLE_SCHEMA)
    USING NEW.id, OLD.change_seq, NEW.change_seq - ${KEPT_US};
  EXECUTE format('INSERT INTO %I.sequence_blocks (client_id, last_seq, first_seq) VALUES ($1, $2, $3)', TG_TABLE_SCHEMA)
    USING NEW.id, NEW.change_seq, NEW.change_seq - taken + 1;
  RETURN NEW;
END
$$`);
    // Each client's sequence as it stands is a block: a token of a write after this one lies
    // past it, so a backup holding no write of the client since (taken before this migration,
    // or before the client's first write after it) still tells it from the positions it gave.
    await queryRunner.query(`INSERT INTO "sequence_blocks" ("client_id", "last_seq", "first_seq") SELECT "id", "change_seq", "change_seq" FROM "clients"`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION "sequence_follows_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  NEW.change_seq := GREATEST(NEW.change_seq, OLD.change_seq + 1, ${CLOCK_US});
  RETURN NEW;
END
$$`);
    await queryRunner.query(`DROP TABLE "sequence_blocks"`);
  }
}
