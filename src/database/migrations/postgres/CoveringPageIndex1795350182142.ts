import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Adds the filter columns to the page index so that a page is found in the index alone.
 * Built CONCURRENTLY beside the old index, which keeps serving reads while the table keeps
 * taking writes (plainly on a table without rows, see below); each step can be run again
 * after a failure. CONCURRENTLY cannot run in a
 * transaction: TypeORM runs `up` outside one (transaction = false) but always wraps a revert,
 * which therefore takes the plain, locking form.
 */
async function replacePageIndex(queryRunner: QueryRunner, columns: string): Promise<void> {
  // On a table without rows (a new database) the plain form is as quick and takes its lock for
  // no time, where CONCURRENTLY would wait for every older transaction of the whole database,
  // in any schema, to end: more than the statement timeout of a start that migrates.
  const [{ empty }] = (await queryRunner.query(`SELECT NOT EXISTS (SELECT 1 FROM "visits") AS "empty"`)) as [{ empty: boolean }];
  const concurrently = queryRunner.isTransactionActive || empty ? '' : ' CONCURRENTLY';
  await queryRunner.query(`DROP INDEX${concurrently} IF EXISTS "ix_visits_client_time_next"`);
  await queryRunner.query(`CREATE INDEX${concurrently} "ix_visits_client_time_next" ON "visits" (${columns})`);
  await queryRunner.query(`DROP INDEX${concurrently} IF EXISTS "ix_visits_client_time"`);
  await queryRunner.query(`ALTER INDEX "ix_visits_client_time_next" RENAME TO "ix_visits_client_time"`);
}

export class CoveringPageIndex1795350182142 implements MigrationInterface {
  name = 'CoveringPageIndex1795350182142';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    await replacePageIndex(queryRunner, `"client_id", "visit_date_time", "id", "brand_id", "visit_type"`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await replacePageIndex(queryRunner, `"client_id", "visit_date_time", "id"`);
  }
}
