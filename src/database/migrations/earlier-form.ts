import type { QueryRunner } from 'typeorm';

/**
 * Whether the database ran an earlier form of a migration, under the name it had before it
 * was replaced (a migration renamed and changed before release: `AddVisitDepartures` took a
 * new name when it gained columns). When it did, the earlier form's row is taken out of the
 * migrations table, since no release knows that name any more, and the migration that replaces
 * it brings the earlier form's tables to its own instead of creating them again (which failed:
 * "table visit_departures already exists", at every run).
 */
export async function ranEarlierForm(queryRunner: QueryRunner, earlierName: string): Promise<boolean> {
  const p = queryRunner.connection.options.type === 'postgres' ? '$1' : '?';
  const rows = (await queryRunner.query(`SELECT "name" FROM "migrations" WHERE "name" = ${p}`, [earlierName])) as unknown[];
  if (rows.length === 0) return false;
  await queryRunner.query(`DELETE FROM "migrations" WHERE "name" = ${p}`, [earlierName]);
  return true;
}
