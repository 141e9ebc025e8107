import type { MigrationInterface, QueryRunner } from 'typeorm';
import { ranEarlierForm } from '../earlier-form.js';

/** Where a visit was before a write moved it to another brand or visit type, and where it went (see VisitDeparture). */
export class AddVisitDepartures1795553445418 implements MigrationInterface {
  name = 'AddVisitDepartures1795553445418';

  async up(queryRunner: QueryRunner): Promise<void> {
    // A database that ran the earlier form (AddVisitDepartures1795549817519) has the table
    // without where each visit went: rebuilt with it, taken from where each visit is now (the
    // nearest the earlier form's rows can tell).
    const earlier = await ranEarlierForm(queryRunner, 'AddVisitDepartures1795549817519');
    if (earlier) await queryRunner.query(`ALTER TABLE "visit_departures" RENAME TO "earlier_visit_departures"`);
    await queryRunner.query(
      `CREATE TABLE "visit_departures" ("client_id" integer NOT NULL, "change_seq" bigint NOT NULL, "visit_id" bigint NOT NULL, "brand_id" integer, "visit_type" varchar(2) NOT NULL, "new_brand_id" integer, "new_visit_type" varchar(2) NOT NULL, CONSTRAINT "fk_visit_departures_client" FOREIGN KEY ("client_id") REFERENCES "clients" ("id") ON DELETE CASCADE ON UPDATE NO ACTION, PRIMARY KEY ("client_id", "change_seq"))`,
    );
    await queryRunner.query(`CREATE INDEX "ix_visit_departures_visit" ON "visit_departures" ("client_id", "visit_id", "change_seq") `);
    if (earlier) {
      await queryRunner.query(
        `INSERT INTO "visit_departures" ("client_id", "change_seq", "visit_id", "brand_id", "visit_type", "new_brand_id", "new_visit_type")
         SELECT d."client_id", d."change_seq", d."visit_id", d."brand_id", d."visit_type", v."brand_id", v."visit_type"
         FROM "earlier_visit_departures" d JOIN "visits" v ON v."id" = d."visit_id"`,
      );
      await queryRunner.query(`DROP TABLE "earlier_visit_departures"`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_visit_departures_visit"`);
    await queryRunner.query(`DROP TABLE "visit_departures"`);
  }
}
