import type { MigrationInterface, QueryRunner } from 'typeorm';

export class AddWebhooks1795391395678 implements MigrationInterface {
  name = 'AddWebhooks1795391395678';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE TABLE "webhook_endpoints" ("id" varchar(40) PRIMARY KEY NOT NULL, "credential_id" varchar(64) NOT NULL, "url" varchar(2048) NOT NULL, "allow_private" boolean NOT NULL DEFAULT (0), "secret" text NOT NULL, "previous_secret" text, "previous_secret_until" datetime, "disabled" boolean NOT NULL DEFAULT (0), "failing_since" datetime, "last_delivery_at" datetime, "last_error" varchar(500), "last_error_at" datetime, "created_at" datetime NOT NULL DEFAULT (datetime('now')))`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_endpoints_credential" ON "webhook_endpoints" ("credential_id") `);
    await queryRunner.query(`CREATE TABLE "webhook_deliveries" ("event_id" varchar(40) PRIMARY KEY NOT NULL, "endpoint_id" varchar(40) NOT NULL, "type" varchar(40) NOT NULL, "client_id" integer NOT NULL, "count" integer NOT NULL, "created_at" datetime NOT NULL, "due_at" datetime NOT NULL, "attempts" integer NOT NULL DEFAULT (0), "locked_until" datetime, "lock_token" varchar(40), "last_error" varchar(500))`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_endpoint_client" ON "webhook_deliveries" ("endpoint_id", "client_id", "attempts") `);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_due" ON "webhook_deliveries" ("due_at") `);
    await queryRunner.query(`DROP INDEX "ix_webhook_endpoints_credential"`);
    await queryRunner.query(`CREATE TABLE "temporary_webhook_endpoints" ("id" varchar(40) PRIMARY KEY NOT NULL, "credential_id" varchar(64) NOT NULL, "url" varchar(2048) NOT NULL, "allow_private" boolean NOT NULL DEFAULT (0), "secret" text NOT NULL, "previous_secret" text, "previous_secret_until" datetime, "disabled" boolean NOT NULL DEFAULT (0), "failing_since" datetime, "last_delivery_at" datetime, "last_error" varchar(500), "last_error_at" datetime, "created_at" datetime NOT NULL DEFAULT (datetime('now')), CONSTRAINT "fk_webhook_endpoints_credential" FOREIGN KEY ("credential_id") REFERENCES "credentials" ("client_id") ON DELETE CASCADE ON UPDATE NO ACTION)`);
    await queryRunner.query(`INSERT INTO "temporary_webhook_endpoints"("id", "credential_id", "url", "allow_private", "secret", "previous_secret", "previous_secret_until", "disabled", "failing_since", "last_delivery_at", "last_error", "last_error_at", "created_at") SELECT "id", "credential_id", "url", "allow_private", "secret", "previous_secret", "previous_secret_until", "disabled", "failing_since", "last_delivery_at", "last_error", "last_error_at", "created_at" FROM "webhook_endpoints"`);
    await queryRunner.query(`DROP TABLE "webhook_endpoints"`);
    await queryRunner.query(`ALTER TABLE "temporary_webhook_endpoints" RENAME TO "webhook_endpoints"`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_endpoints_credential" ON "webhook_endpoints" ("credential_id") `);
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_endpoint_client"`);
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_due"`);
    await queryRunner.query(`CREATE TABLE "temporary_webhook_deliveries" ("event_id" varchar(40) PRIMARY KEY NOT NULL, "endpoint_id" varchar(40) NOT NULL, "type" varchar(40) NOT NULL, "client_id" integer NOT NULL, "count" integer NOT NULL, "created_at" datetime NOT NULL, "due_at" datetime NOT NULL, "attempts" integer NOT NULL DEFAULT (0), "locked_until" datetime, "lock_token" varchar(40), "last_error" varchar(500), CONSTRAINT "fk_webhook_deliveries_endpoint" FOREIGN KEY ("endpoint_id") REFERENCES "webhook_endpoints" ("id") ON DELETE CASCADE ON UPDATE NO ACTION)`);
    await queryRunner.query(`INSERT INTO "temporary_webhook_deliveries"("event_id", "endpoint_id", "type", "client_id", "count", "created_at", "due_at", "attempts", "locked_until", "lock_token", "last_error") SELECT "event_id", "endpoint_id", "type", "client_id", "count", "created_at", "due_at", "attempts", "locked_until", "lock_token", "last_error" FROM "webhook_deliveries"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`ALTER TABLE "temporary_webhook_deliveries" RENAME TO "webhook_deliveries"`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_endpoint_client" ON "webhook_deliveries" ("endpoint_id", "client_id", "attempts") `);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_due" ON "webhook_deliveries" ("due_at") `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_due"`);
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_endpoint_client"`);
    await queryRunner.query(`ALTER TABLE "webhook_deliveries" RENAME TO "temporary_webhook_deliveries"`);
    await queryRunner.query(`CREATE TABLE "webhook_deliveries" ("event_id" varchar(40) PRIMARY KEY NOT NULL, "endpoint_id" varchar(40) NOT NULL, "type" varchar(40) NOT NULL, "client_id" integer NOT NULL, "count" integer NOT NULL, "created_at" datetime NOT NULL, "due_at" datetime NOT NULL, "attempts" integer NOT NULL DEFAULT (0), "locked_until" datetime, "lock_token" varchar(40), "last_error" varchar(500))`);
    await queryRunner.query(`INSERT INTO "webhook_deliveries"("event_id", "endpoint_id", "type", "client_id", "count", "created_at", "due_at", "attempts", "locked_until", "lock_token", "last_error") SELECT "event_id", "endpoint_id", "type", "client_id", "count", "created_at", "due_at", "attempts", "locked_until", "lock_token", "last_error" FROM "temporary_webhook_deliveries"`);
    await queryRunner.query(`DROP TABLE "temporary_webhook_deliveries"`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_due" ON "webhook_deliveries" ("due_at") `);
    await queryRunner.query(`CREATE INDEX "ix_webhook_deliveries_endpoint_client" ON "webhook_deliveries" ("endpoint_id", "client_id", "attempts") `);
    await queryRunner.query(`DROP INDEX "ix_webhook_endpoints_credential"`);
    await queryRunner.query(`ALTER TABLE "webhook_endpoints" RENAME TO "temporary_webhook_endpoints"`);
    await queryRunner.query(`CREATE TABLE "webhook_endpoints" ("id" varchar(40) PRIMARY KEY NOT NULL, "credential_id" varchar(64) NOT NULL, "url" varchar(2048) NOT NULL, "allow_private" boolean NOT NULL DEFAULT (0), "secret" text NOT NULL, "previous_secret" text, "previous_secret_until" datetime, "disabled" boolean NOT NULL DEFAULT (0), "failing_since" datetime, "last_delivery_at" datetime, "last_error" varchar(500), "last_error_at" datetime, "created_at" datetime NOT NULL DEFAULT (datetime('now')))`);
    await queryRunner.query(`INSERT INTO "webhook_endpoints"("id", "credential_id", "url", "allow_private", "secret", "previous_secret", "previous_secret_until", "disabled", "failing_since", "last_delivery_at", "last_error", "last_error_at", "created_at") SELECT "id", "credential_id", "url", "allow_private", "secret", "previous_secret", "previous_secret_until", "disabled", "failing_since", "last_delivery_at", "last_error", "last_error_at", "created_at" FROM "temporary_webhook_endpoints"`);
    await queryRunner.query(`DROP TABLE "temporary_webhook_endpoints"`);
    await queryRunner.query(`CREATE INDEX "ix_webhook_endpoints_credential" ON "webhook_endpoints" ("credential_id") `);
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_due"`);
    await queryRunner.query(`DROP INDEX "ix_webhook_deliveries_endpoint_client"`);
    await queryRunner.query(`DROP TABLE "webhook_deliveries"`);
    await queryRunner.query(`DROP INDEX "ix_webhook_endpoints_credential"`);
    await queryRunner.query(`DROP TABLE "webhook_endpoints"`);
  }
}
