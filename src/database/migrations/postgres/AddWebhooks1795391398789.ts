import type { MigrationInterface, QueryRunner } from 'typeorm';

export class AddWebhooks1795391398789 implements MigrationInterface {
  name = 'AddWebhooks1795391398789';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "webhook_endpoints" ("id" character varying(40) NOT NULL, "credential_id" character varying(64) NOT NULL, "url" character varying(2048) NOT NULL, "allow_private" boolean NOT NULL DEFAULT false, "secret" text NOT NULL, "previous_secret" text, "previous_secret_until" TIMESTAMP WITH TIME ZONE, "disabled" boolean NOT NULL DEFAULT false, "failing_since" TIMESTAMP WITH TIME ZONE, "last_delivery_at" TIMESTAMP WITH TIME ZONE, "last_error" character varying(500), "last_error_at" TIMESTAMP WITH TIME ZONE, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL DEFAULT now(), CONSTRAINT "PK_054c4cfb95223732f5939d2d546" PRIMARY KEY ("id"))`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_endpoints_credential" ON "webhook_endpoints"  ("credential_id") `);
    await queryRunner.query(`CREATE TABLE "webhook_deliveries" ("event_id" character varying(40) NOT NULL, "endpoint_id" character varying(40) NOT NULL, "type" character varying(40) NOT NULL, "client_id" integer NOT NULL, "count" integer NOT NULL, "created_at" TIMESTAMP WITH TIME ZONE NOT NULL, "due_at" TIMESTAMP WITH TIME ZONE NOT NULL, "attempts" integer NOT NULL DEFAULT '0', "locked_until" TIMESTAMP WITH TIME ZONE, "lock_token" character varying(40), "last_error" character varying(500), CONSTRAINT "PK_27d1ee90033bdafe0ffe8f1be6f" PRIMARY KEY ("event_id"))`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_endpoint_client" ON "webhook_deliveries"  ("endpoint_id", "client_id", "attempts") `);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_due" ON "webhook_deliveries"  ("due_at") `);
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" ADD CONSTRAINT "fk_webhook_endpoints_credential" FOREIGN KEY ("credential_id") REFERENCES "credentials"("client_id") ON DELETE CASCADE ON UPDATE NO ACTION`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" ADD CONSTRAINT "fk_webhook_deliveries_endpoint" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints"("id") ON DELETE CASCADE ON UPDATE NO ACTION`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" DROP CONSTRAINT "fk_webhook_deliveries_endpoint"`);
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" DROP CONSTRAINT "fk_webhook_endpoints_credential"`);
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_due"`);
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_endpoint_client"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP INDEX "ix_webhook_endpoints_credential"`);
    await queryRunner.query(`DROP TABLE "webhook_endpoints"`);
  }
}
