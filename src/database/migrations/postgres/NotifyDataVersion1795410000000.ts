import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Every change of a client's data version is announced on the channel
 * `results_data_version` when its transaction commits, with the schema, the client and the
 * new version: each replica keeps the versions it has read and learns of changes by
 * listening (ClientDataVersions), instead of reading the version for every page request.
 */
export class NotifyDataVersion1795410000000 implements MigrationInterface {
  name = 'NotifyDataVersion1795410000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE FUNCTION "notify_data_version"() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  PERFORM pg_notify('results_data_version', json_build_object('schema', TG_TABLE_SCHEMA, 'client', NEW.id, 'version', NEW.data_version)::text);
  RETURN NULL;
END
$$`);
    await queryRunner.query(
      `CREATE TRIGGER "clients_data_version_notify" AFTER UPDATE OF "data_version" ON "clients" FOR EACH ROW ` +
        `WHEN (OLD.data_version IS DISTINCT FROM NEW.data_version) EXECUTE FUNCTION "notify_data_version"()`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER "clients_data_version_notify" ON "clients"`);
    await queryRunner.query(`DROP FUNCTION "notify_data_version"()`);
  }
}
