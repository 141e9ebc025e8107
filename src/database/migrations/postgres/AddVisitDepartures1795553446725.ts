import type { MigrationInterface, QueryRunner } from 'typeorm';

/** Where a visit was before a write moved it to another brand or visit type, and where it went (see VisitDeparture). */
export class AddVisitDepartures1795553446725 implements MigrationInterface {
  name = 'AddVisitDepartures1795553446725';

  async up(queryRunner: QueryRunner): Promise<void> {
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
