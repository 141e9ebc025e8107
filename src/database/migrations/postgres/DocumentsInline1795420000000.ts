import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Documents rewritten per statement: a few MB. */
const BATCH = 2000;

/**
 * Visit documents are kept in the table's own rows, uncompressed. PostgreSQL compresses any
 * row over about 2 KB (pglz), and a document is about 4 KB: every page read then decompressed
 * each of its documents, which took more than half of the server's time for a page (12.6
 * against 5.2 ms for 1000 visits, measured on 200,000 visits). With the table's
 * toast_tuple_target at its highest (8160 bytes), rows up to that size are stored as they
 * are; larger documents are still compressed and moved out of line as before. The documents
 * already stored compressed are rewritten once, uncompressed. The bytes read are the same
 * either way: only how the server keeps them changes.
 */
export class DocumentsInline1795420000000 implements MigrationInterface {
  name = 'DocumentsInline1795420000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "visit_documents" SET (toast_tuple_target = 8160)`);
    // In batches of visit ids, each statement well within the connection's query timeout.
    for (let last = 0; ; ) {
      const [{ upto }] = (await queryRunner.query(
        `SELECT max("visit_id") AS upto FROM (SELECT "visit_id" FROM "visit_documents" WHERE "visit_id" > $1 ORDER BY "visit_id" LIMIT ${BATCH}) batch`,
        [last],
      )) as { upto: number | null }[];
      if (upto === null) return;
      // A stored value smaller than its bytes is compressed; the new value is stored by the rule above.
      await queryRunner.query(
        `UPDATE "visit_documents" SET "standard" = "standard" || ''::bytea WHERE "visit_id" > $1 AND "visit_id" <= $2 ` +
          `AND pg_column_size("standard") < octet_length("standard") AND octet_length("standard") + octet_length("plus") < 8000`,
        [last, upto],
      );
      last = upto;
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "visit_documents" RESET (toast_tuple_target)`);
  }
}
