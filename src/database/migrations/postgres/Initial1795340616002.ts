import type { MigrationInterface, QueryRunner } from 'typeorm';

export class Initial1795340616002 implements MigrationInterface {
  name = 'Initial1795340616002';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "clients" ("id" integer NOT NULL, "name" character varying(200) NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_f1ab7cf3a5714dbc6bb4e1c28a4" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE TABLE "brands" ("id" integer NOT NULL, "client_id" integer NOT NULL, "name" character varying(200) NOT NULL, CONSTRAINT "PK_b0c437120b624da1034a81fc561" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "ix_brands_client" ON "brands"  ("client_id") `);
    await queryRunner.query(`CREATE TABLE "branches" ("id" character varying(64) NOT NULL, "client_id" integer NOT NULL, "brand_id" integer, "name" character varying(200) NOT NULL, "branch_code" character varying(100), CONSTRAINT "PK_7f37d3b42defea97f1df0d19535" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "ix_branches_client" ON "branches"  ("client_id") `);
    await queryRunner.query(`CREATE TABLE "visit_types" ("code" character varying(2) NOT NULL, "name" character varying(100) NOT NULL, CONSTRAINT "PK_82a83fb62ba26268de9df659c43" PRIMARY KEY ("code"))`);
    await queryRunner.query(`CREATE TABLE "visits" ("id" bigint NOT NULL, "client_id" integer NOT NULL, "brand_id" integer, "branch_id" character varying(64) NOT NULL, "visit_type" character varying(2) NOT NULL, "questionnaire_type" character varying(100) NOT NULL, "visit_score" double precision NOT NULL, "recommend_score" double precision, "recommend_comment" text, "visit_date" character varying(10) NOT NULL, "visit_date_time" character varying(19) NOT NULL, "modification_date" character varying(19) NOT NULL, "visit_source" character varying(100), "sections" text NOT NULL, "guest_id" character varying(100), "opt_in_contact_by_email" boolean, "opt_in_join_marketing" boolean, "completed_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_0b0b322289a41015c6ea4e8bf30" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "ix_visits_brand" ON "visits"  ("brand_id") `);
    await queryRunner.query(`CREATE INDEX "ix_visits_branch" ON "visits"  ("branch_id") `);
    await queryRunner.query(`CREATE INDEX "ix_visits_type" ON "visits"  ("visit_type") `);
    await queryRunner.query(`CREATE INDEX "ix_visits_client_modified" ON "visits"  ("client_id", "modification_date") `);
    await queryRunner.query(`CREATE INDEX "ix_visits_client_time" ON "visits"  ("client_id", "visit_date_time", "id") `);
    await queryRunner.query(`CREATE TABLE "credentials" ("client_id" character varying(64) NOT NULL, "name" character varying(200), "secret_hash" character varying(200) NOT NULL, "scopes" text NOT NULL, "client_ids" text NOT NULL, "brand_ids" text, "visit_types" text, "disabled" boolean NOT NULL DEFAULT false, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_69f76326bcf634e1510de10a068" PRIMARY KEY ("client_id"))`);
    await queryRunner.query(`CREATE TABLE "api_keys" ("id" SERIAL NOT NULL, "prefix" character varying(20) NOT NULL, "hash" character varying(64) NOT NULL, "credential_id" character varying(64) NOT NULL, "revoked" boolean NOT NULL DEFAULT false, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_5c8a79801b44bd27b79228e1dad" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_api_keys_prefix" ON "api_keys"  ("prefix") `);
    await queryRunner.query(`CREATE UNIQUE INDEX "uq_api_keys_hash" ON "api_keys"  ("hash") `);
    await queryRunner.query(`CREATE INDEX "ix_api_keys_credential" ON "api_keys"  ("credential_id") `);
    await queryRunner.query(`CREATE TABLE "signing_keys" ("kid" character varying(64) NOT NULL, "alg" character varying(10) NOT NULL, "private_key" text NOT NULL, "public_jwk" text NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "retired_at" TIMESTAMP WITH TIME ZONE, CONSTRAINT "PK_13362ac3e792c69417e1a53d355" PRIMARY KEY ("kid"))`);
    await queryRunner.query(`CREATE TABLE "dish_images" ("id" character varying(36) NOT NULL, "content_type" character varying(50) NOT NULL, "bytes" integer NOT NULL, "width" integer NOT NULL, "height" integer NOT NULL, "sha256" character varying(64) NOT NULL, "data" bytea, "storage_key" character varying(200), "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_cdc3f99f7c94f670a29549444f0" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE TABLE "menus" ("id" integer NOT NULL, "client_id" integer NOT NULL, "name" character varying(200) NOT NULL, "start_date" character varying(10) NOT NULL, "end_date" character varying(10), CONSTRAINT "PK_3fec3d93327f4538e0cbd4349c4" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "ix_menus_client" ON "menus"  ("client_id", "id") `);
    await queryRunner.query(`CREATE TABLE "dishes" ("id" SERIAL NOT NULL, "menu_id" integer NOT NULL, "code" character varying(50) NOT NULL, "description" character varying(250) NOT NULL, "type" character varying(50) NOT NULL, "sort_order" integer, "expiry_date" character varying(10), "keywords" text NOT NULL DEFAULT '[]', "image_id" character varying(36), "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), "updated_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "uq_dishes_menu_code" UNIQUE ("menu_id", "code"), CONSTRAINT "PK_f4748c8e8382ad34ef517520b7b" PRIMARY KEY ("id"))`);
    await queryRunner.query(`ALTER TABLE "brands" ADD CONSTRAINT "fk_brands_client" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "branches" ADD CONSTRAINT "fk_branches_client" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "branches" ADD CONSTRAINT "fk_branches_brand" FOREIGN KEY ("brand_id") REFERENCES "brands"("id") ON DELETE SET NULL ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "visits" ADD CONSTRAINT "fk_visits_client" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "visits" ADD CONSTRAINT "fk_visits_brand" FOREIGN KEY ("brand_id") REFERENCES "brands"("id") ON DELETE SET NULL ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "visits" ADD CONSTRAINT "fk_visits_branch" FOREIGN KEY ("branch_id") REFERENCES "branches"("id") ON DELETE RESTRICT ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "visits" ADD CONSTRAINT "fk_visits_type" FOREIGN KEY ("visit_type") REFERENCES "visit_types"("code") ON DELETE RESTRICT ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "api_keys" ADD CONSTRAINT "fk_api_keys_credential" FOREIGN KEY ("credential_id") REFERENCES "credentials"("client_id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "menus" ADD CONSTRAINT "fk_menus_client" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "dishes" ADD CONSTRAINT "fk_dishes_menu" FOREIGN KEY ("menu_id") REFERENCES "menus"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "dishes" ADD CONSTRAINT "fk_dishes_image" FOREIGN KEY ("image_id") REFERENCES "dish_images"("id") ON DELETE SET NULL ON UPDATE NO ACTION`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "dishes" DROP CONSTRAINT "fk_dishes_image"`);
    await queryRunner.query(`ALTER TABLE "dishes" DROP CONSTRAINT "fk_dishes_menu"`);
    await queryRunner.query(`ALTER TABLE "menus" DROP CONSTRAINT "fk_menus_client"`);
    await queryRunner.query(`ALTER TABLE "api_keys" DROP CONSTRAINT "fk_api_keys_credential"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP CONSTRAINT "fk_visits_type"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP CONSTRAINT "fk_visits_branch"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP CONSTRAINT "fk_visits_brand"`);
    await queryRunner.query(`ALTER TABLE "visits" DROP CONSTRAINT "fk_visits_client"`);
    await queryRunner.query(`ALTER TABLE "branches" DROP CONSTRAINT "fk_branches_brand"`);
    await queryRunner.query(`ALTER TABLE "branches" DROP CONSTRAINT "fk_branches_client"`);
    await queryRunner.query(`ALTER TABLE "brands" DROP CONSTRAINT "fk_brands_client"`);
    await queryRunner.query(`DROP TABLE "dishes"`);
    await queryRunner.query(`DROP INDEX "ix_menus_client"`);
    await queryRunner.query(`DROP TABLE "menus"`);
    await queryRunner.query(`DROP TABLE "dish_images"`);
    await queryRunner.query(`DROP TABLE "signing_keys"`);
    await queryRunner.query(`DROP INDEX "ix_api_keys_credential"`);
    await queryRunner.query(`DROP INDEX "uq_api_keys_hash"`);
    await queryRunner.query(`DROP INDEX "uq_api_keys_prefix"`);
    await queryRunner.query(`DROP TABLE "api_keys"`);
    await queryRunner.query(`DROP TABLE "credentials"`);
    await queryRunner.query(`DROP INDEX "ix_visits_client_time"`);
    await queryRunner.query(`DROP INDEX "ix_visits_client_modified"`);
    await queryRunner.query(`DROP INDEX "ix_visits_type"`);
    await queryRunner.query(`DROP INDEX "ix_visits_branch"`);
    await queryRunner.query(`DROP INDEX "ix_visits_brand"`);
    await queryRunner.query(`DROP TABLE "visits"`);
    await queryRunner.query(`DROP TABLE "visit_types"`);
    await queryRunner.query(`DROP INDEX "ix_branches_client"`);
    await queryRunner.query(`DROP TABLE "branches"`);
    await queryRunner.query(`DROP INDEX "ix_brands_client"`);
    await queryRunner.query(`DROP TABLE "brands"`);
    await queryRunner.query(`DROP TABLE "clients"`);
  }
}
