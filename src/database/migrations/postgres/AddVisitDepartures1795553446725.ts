import type { MigrationInterface, QueryRunner } from 'typeorm';
import { ranEarlierForm } from '../earlier-form.js';

/** Where a visit was before a write moved it to another brand or visit type, and where it went (see VisitDeparture). */
export class AddVisitDepartures1795553446725 implements MigrationInterface {
  name = 'AddVisitDepartures1795553446725';

  async up(queryRunner: QueryRunner): Promise<void> {
    // A database that ran the earlier form (AddVisitDepartures1795549819651) has the table
    // without where each visit went: given it, taken from where each visit is now (the nearest
    // the earlier form's rows can tell), and the index.
    if (await ranEarlierForm(queryRunner, 'AddVisitDepartures1795549819651')) {
      await queryRunner.query(`ALTER TABLE "visit_departures" ADD "new_brand_id" integer, ADD "new_visit_type" character varying(2)`);
      await queryRunner.query(
        `UPDATE "visit_departures" d SET "new_brand_id" = v."brand_id", "new_visit_type" = v."visit_type" FROM "visits" v WHERE v."id" = d."visit_id"`,
      );
      await queryRunner.query(`DELETE FROM "visit_departures" WHERE "new_visit_type" IS NULL`);
      await queryRunner.query(`ALTER TABLE "visit_departures" ALTER COLUMN "new_visit_type" SET NOT NULL`);
      await queryRunner.query(`CREATE INDEX "ix_visit_departures_visit" ON "visit_departures"  ("client_id", "visit_id", "change_seq") `);
      return;
    }
    await queryRunner.query(`CREATE TABLE "visit_departures" ("client_id" integer NOT NULL, "change_seq" bigint NOT NULL, "visit_id" bigint NOT NULL, "brand_id" integer, "visit_type" character varying(2) NOT NULL, "new_brand_id" integer, "new_visit_type" character varying(2) NOT NULL, CONSTRAINT "PK_573e7e13215f8949967a24fce69" PRIMARY KEY ("client_id", "change_seq"))`);
    await queryRunner.query(`CREATE INDEX "ix_visit_departures_visit" ON "visit_departures"  ("client_id", "visit_id", "change_seq") `);
    await queryRunner.query(`ALTER TABLE "visit_departures" ADD CONSTRAINT "fk_visit_departures_client" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "visit_departures" DROP CONSTRAINT "fk_visit_departures_client"`);
    await queryRunner.query(`DROP INDEX "ix_visit_departures_visit"`);
    await queryRunner.query(`DROP TABLE "visit_departures"`);
  }
}
