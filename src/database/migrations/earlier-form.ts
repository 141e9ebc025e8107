import type { QueryRunner } from 'typeorm';

/**
 * Names of migrations replaced by a later form under another name, on SQLite and PostgreSQL:
 * `AddVisitDepartures` took a new name when it gained columns, and PostgreSQL's
 * `AnnounceWriteSequence` one that runs it after `SequenceFollowsDataVersion` (releases of
 * 2026-11-25 ran it under the first). A database that ran one keeps its row: replicas of the
 * release that ran it (still serving while a rollout replaces them) then find their own
 * migrations applied, rather than pending, and stay ready. This release knows the names, so they
 * are not migrations of a later release (`migrations check` said the database was ahead).
 */
export const SUPERSEDED_MIGRATIONS: readonly string[] = [
  'AddVisitDepartures1795549817519',
  'AddVisitDepartures1795549819651',
  'AnnounceWriteSequence1795700000000',
];

/**
 * Whether the database ran an earlier form of a migration, under the name it had before it was
 * replaced: the migration that replaces it then brings the earlier form's tables to its own
 * instead of creating them again (which failed: "table visit_departures already exists", at
 * every run).
 */
export async function ranEarlierForm(queryRunner: QueryRunner, earlierName: string): Promise<boolean> {
  const p = queryRunner.connection.options.type === 'postgres' ? '$1' : '?';
  const rows = (await queryRunner.query(`SELECT "name" FROM "migrations" WHERE "name" = ${p}`, [earlierName])) as unknown[];
  return rows.length > 0;
}
