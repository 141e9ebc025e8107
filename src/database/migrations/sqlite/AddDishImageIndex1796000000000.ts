import type { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * An index on the image a dish shows: serving an image (GET /menus/dishes/images/{imageId})
 * finds its dish, and so its menu's client, by it, and removing a replaced image sets the dish
 * references to it to null (the foreign key's ON DELETE SET NULL). Without it both read every
 * dish of every client.
 */
export class AddDishImageIndex1796000000000 implements MigrationInterface {
  name = 'AddDishImageIndex1796000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX "ix_dishes_image" ON "dishes" ("image_id") `);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX "ix_dishes_image"`);
  }
}
