import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, type EntityManager } from 'typeorm';
import { DishImage } from './entities/dish-image.entity.js';
import { Dish } from './entities/dish.entity.js';
import { Menu } from './entities/menu.entity.js';
import type { PreparedImage } from './image-inspector.js';

export type DishInput = Pick<Dish, 'menuId' | 'code' | 'description' | 'type' | 'order' | 'expiryDate' | 'keywords'>;

@Injectable()
export class MenusRepository {
  constructor(@InjectDataSource() private readonly db: DataSource) {}

  findMenu(id: number): Promise<Menu | null> {
    return this.db.getRepository(Menu).findOneBy({ id });
  }

  /**
   * Writes menus with their dishes and images in one transaction: all of a file or none.
   * A dish with the same code on the same menu is updated.
   */
  async saveMenus(menus: { menu: Menu; dishes: { dish: DishInput; image: PreparedImage | null }[] }[]): Promise<void> {
    await this.db.transaction(async (tx) => {
      for (const { menu, dishes } of menus) {
        await tx.getRepository(Menu).upsert(menu, ['id']);
        for (const { dish, image } of dishes) await this.saveDish(tx, dish, image);
      }
    });
  }

  /** Inserts or updates one dish (by menu and code) with its image, inside the caller's transaction. */
  async saveDish(tx: EntityManager, input: DishInput, image: PreparedImage | null): Promise<Dish> {
    const dishes = tx.getRepository(Dish);
    const existing = await dishes.findOneBy({ menuId: input.menuId, code: input.code });
    const previousImageId = existing?.imageId ?? null;
    let imageId = previousImageId;
    const images = tx.getRepository(DishImage);
    const unchanged = image && previousImageId && (await images.findOneBy({ id: previousImageId }))?.sha256 === image.sha256;
    if (image && !unchanged) {
      imageId = randomUUID();
      await images.insert({
        id: imageId,
        contentType: image.contentType,
        bytes: image.data.length,
        width: image.width,
        height: image.height,
        sha256: image.sha256,
        data: image.data,
        storageKey: null,
      });
    }
    const saved = await dishes.save(Object.assign(existing ?? new Dish(), input, { imageId }));
    // The replaced image is deleted with the change, so no image is left without a dish.
    if (previousImageId && previousImageId !== imageId) await images.delete({ id: previousImageId });
    return saved;
  }

  count(): Promise<{ menus: number; dishes: number; images: number }> {
    return Promise.all([
      this.db.getRepository(Menu).count(),
      this.db.getRepository(Dish).count(),
      this.db.getRepository(DishImage).count(),
    ]).then(([menus, dishes, images]) => ({ menus, dishes, images }));
  }
}
