import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The announcement of a client's data change carries its write sequence as the version: the
 * sequence moves with every change and, kept ahead of the clock, never goes back, even when the
 * database is restored from an earlier backup, where data_version would count again from the
 * backup's and name other data by versions replicas had already seen. It runs after
 * SequenceFollowsDataVersion, which moved the sequence past the clock and makes every move of
 * data_version move it too: from the commit of this change on, every announcement carries a
 * sequence ahead of any data_version a replica of the release before has seen, and a write of
 * that release (data_version alone) still announces a new one.
 */
export class AnnounceWriteSequence1795700000003 implements MigrationInterface {
  name = 'AnnounceWriteSequence1795700000003';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION "notify_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('results_data_version', json_build_object('schema', TG_TABLE_SCHEMA, 'client', NEW.id, 'version', NEW.change_seq)::text);
  RETURN NULL;
END
$$`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE OR REPLACE FUNCTION "notify_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('results_data_version', json_build_object('schema', TG_TABLE_SCHEMA, 'client', NEW.id, 'version', NEW.data_version)::text);
  RETURN NULL;
END
$$`);
  }
}
