import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Logger, PreconditionFailedException } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, In, IsNull, Not, type EntityManager, type SelectQueryBuilder } from 'typeorm';
import { inTransaction } from '../database/transaction.js';
import { upsertRows } from '../database/upsert.js';
import { DishImage } from './entities/dish-image.entity.js';
import { Dish } from './entities/dish.entity.js';
import { Menu } from './entities/menu.entity.js';
import type { PreparedImage } from './image-inspector.js';
import { DamagedImageFile, type ImageStorage, type StoredBytes } from './image-storage.js';

export const IMAGE_STORAGE = Symbol('ImageStorage');

export type DishInput = Pick<Dish, 'menuId' | 'code' | 'description' | 'type' | 'order' | 'expiryDate' | 'keywords'>;

/** A dish with what its record shows of its image. */
export interface DishWithImage {
  dish: Dish;
  image: Pick<DishImage, 'id' | 'contentType' | 'bytes' | 'width' | 'height'> | null;
}

/** An image with the client it belongs to (through its dish and menu). */
export interface OwnedImage {
  image: DishImage;
  clientId: number;
}

/**
 * Where a dish without a display order stands: one past the largest order a dish may have
 * (a 32-bit integer), so that a dish with the largest order still comes before it.
 */
export const UNORDERED = 2_147_483_648;

@Injectable()
export class MenusRepository {
  private readonly postgres: boolean;

  private readonly logger = new Logger('Images');

  constructor(
    @InjectDataSource() private readonly db: DataSource,
    @Inject(IMAGE_STORAGE) private readonly storage: ImageStorage,
  ) {
    this.postgres = db.options.type === 'postgres';
  }

  findMenu(id: number): Promise<Menu | null> {
    return this.db.getRepository(Menu).findOneBy({ id });
  }

  /** Active menus (no end date, or ending today or later) after `afterId`, in id order. */
  activeMenus(clientId: number, today: string, afterId: number, limit: number): Promise<Menu[]> {
    return this.db
      .getRepository(Menu)
      .createQueryBuilder('m')
      .where('m.client_id = :clientId', { clientId })
      .andWhere('(m.end_date IS NULL OR m.end_date >= :today)', { today })
      .andWhere('m.id > :afterId', { afterId })
      .orderBy('m.id', 'ASC')
      .limit(limit)
      .getMany();
  }

  /**
   * Dishes of a menu after the position `[order, id]` (order UNORDERED for a dish without one),
   * with their image descriptions, in the keyset of dish pages: display order first (dishes
   * without one last), then id; tokens hold a dish's `[order ?? UNORDERED, id]`. Read as two
   * ranges of the index on (menu_id, sort_order, id), each in its order and stopped at `limit`:
   * the dishes with an order after the position, by order and id, then (when those run short)
   * the dishes without one, by id. The order is the one `COALESCE(sort_order, UNORDERED), id` gives, since no
   * order reaches UNORDERED; sorted by that expression, which no index holds, every page read
   * and sorted the whole menu (PostgreSQL, 50,100 dishes: 15 ms a median page, 29 ms the first,
   * 65 ms where the sort spilled to disk; 1.3 ms a median page read in the index).
   */
  async dishes(menuId: number, after: [number, number] | null, limit: number): Promise<DishWithImage[]> {
    const [order, id] = after ?? [null, null];
    const rows: Dish[] = [];
    if (order === null || order < UNORDERED) {
      const ordered = this.dishQuery(menuId).andWhere('d.sort_order IS NOT NULL');
      if (after) ordered.andWhere('(d.sort_order, d.id) > (:order, :id)', { order, id });
      rows.push(...(await this.inIndexOrder(ordered, limit)));
    }
    if (rows.length < limit && (order === null || order <= UNORDERED)) {
      const unordered = this.dishQuery(menuId).andWhere('d.sort_order IS NULL');
      if (order === UNORDERED) unordered.andWhere('d.id > :id', { id });
      // Two statements, where the page was one: a dish of the ordered part whose order a write
      // took away in between is on the page already (as it was before the write), not twice.
      if (rows.length > 0) unordered.andWhere('d.id NOT IN (:...seen)', { seen: rows.map((dish) => dish.id) });
      rows.push(...(await this.inIndexOrder(unordered, limit - rows.length)));
    }
    return rows.map((dish) => ({ dish, image: dish.image ?? null }));
  }

  /**
   * The first `limit` dishes of a range of the index on (menu_id, sort_order, id), in its order.
   * Dishes without an order are sorted by sort_order too (all null), so that this index alone
   * gives the order: by id alone, PostgreSQL walked the primary key from the position, through
   * the later dishes of every menu, until it had found `limit`. (It may still read a range of
   * the primary key and sort it, when it reckons few dishes of any menu follow the position.)
   */
  private inIndexOrder(query: SelectQueryBuilder<Dish>, limit: number): Promise<Dish[]> {
    return query.orderBy('d.sort_order', 'ASC').addOrderBy('d.id', 'ASC').limit(limit).getMany();
  }

  /** A menu's dishes with their image descriptions. */
  private dishQuery(menuId: number): SelectQueryBuilder<Dish> {
    return this.db
      .getRepository(Dish)
      .createQueryBuilder('d')
      .leftJoinAndMapOne('d.image', DishImage, 'i', 'i.id = d.image_id')
      .select(['d', 'i.id', 'i.contentType', 'i.bytes', 'i.width', 'i.height'])
      .where('d.menu_id = :menuId', { menuId });
  }

  /** A dish with its image's record, read in `tx` when given (the transaction that wrote it, to answer with what it wrote). */
  async dishWithImage(id: number, tx: EntityManager = this.db.manager): Promise<DishWithImage | null> {
    const dish = await tx.getRepository(Dish).findOneBy({ id });
    if (!dish) return null;
    const image = dish.imageId
      ? await tx.getRepository(DishImage).findOne({
          select: { id: true, contentType: true, bytes: true, width: true, height: true },
          where: { id: dish.imageId },
        })
      : null;
    return { dish, image };
  }

  /** An image row with its bytes, and the client whose menu it is on. */
  async ownedImage(imageId: string): Promise<OwnedImage | null> {
    const row = await this.db
      .getRepository(DishImage)
      .createQueryBuilder('i')
      .innerJoin(Dish, 'd', 'd.image_id = i.id')
      .innerJoin(Menu, 'm', 'm.id = d.menu_id')
      .addSelect('m.client_id', 'client_id')
      .where('i.id = :imageId', { imageId })
      .getRawAndEntities();
    const image = row.entities[0];
    const raw = row.raw[0] as { client_id?: number } | undefined;
    return image && raw?.client_id !== undefined ? { image, clientId: Number(raw.client_id) } : null;
  }

  readImage(image: DishImage): Promise<Buffer> {
    return this.storage.read(image);
  }

  /**
   * Writes menus with their dishes and images in one transaction: all or nothing.
   * A dish with the same code on the same menu is updated.
   */
  async saveMenus(menus: { menu: Menu; dishes: { dish: DishInput; image: PreparedImage | null }[] }[]): Promise<void> {
    await this.withImages(async (tx, written, replaced) => {
      // The menus' rows first, in id order, whatever the file's: two imports listing the same
      // menus in other orders would otherwise each hold one the other waits for (a deadlock on
      // PostgreSQL); the second now waits for the first and then writes. The dishes follow in
      // the file's order.
      for (const { menu } of [...menus].sort((a, b) => a.menu.id - b.menu.id)) await upsertRows(tx, Menu, [menu], ['id'], { sameOwner: 'clientId' });
      for (const { dishes } of menus) {
        for (const { dish, image } of dishes) await this.writeDish(tx, dish, image, written, replaced);
      }
    });
  }

  /**
   * Adds or updates one dish (by menu and code) with its image, and gives it as written: read in
   * its own transaction, since a concurrent post of the same code may replace it (and delete
   * its image) as soon as it commits. `admit` judges the menu as the transaction reads it,
   * held against writers until the dish is written (PostgreSQL: a share lock on its row, taken
   * before the dish's own lock, in the order an import takes them; SQLite: the write lock
   * every transaction begins with), so a menu an import ends meanwhile takes no dish.
   */
  saveDish(
    input: DishInput,
    image: PreparedImage | null,
    expected: 'absent' | 'present' | 'any' = 'any',
    admit: (menu: Menu | null) => void = () => undefined,
  ): Promise<DishWithImage> {
    return this.withImages(async (tx, written, replaced) => {
      admit(
        await tx.getRepository(Menu).findOne({
          where: { id: input.menuId },
          ...(this.postgres ? { lock: { mode: 'pessimistic_read' as const } } : {}),
        }),
      );
      const saved = await this.writeDish(tx, input, image, written, replaced, expected);
      return (await this.dishWithImage(saved.id, tx))!;
    });
  }

  /**
   * A transaction that writes image bytes: what it stored is discarded if it fails, and the
   * images it replaced are removed once it has committed. Both removals are tidying only: one
   * that fails (a folder mounted read-only, a file the system will not remove) is logged and
   * its file left for `images sweep`, while the write's own outcome stands: a committed write
   * is answered as written, a failed one with its own error.
   */
  private async withImages<T>(
    work: (tx: EntityManager, written: StoredBytes[], replaced: StoredBytes[]) => Promise<T>,
  ): Promise<T> {
    const written: StoredBytes[] = [];
    const replaced: StoredBytes[] = [];
    let result: T;
    try {
      result = await inTransaction(this.db, (tx) => work(tx, written, replaced));
    } catch (error) {
      await this.discardAll(written, 'written for a write that failed');
      throw error;
    }
    await this.discardAll(replaced, 'of an image replaced');
    return result;
  }

  /** Removes stored image bytes, each removal on its own; a failed one is logged, not thrown. */
  private async discardAll(stored: readonly StoredBytes[], what: string): Promise<void> {
    const outcomes = await Promise.allSettled(stored.map((s) => this.storage.discard(s)));
    outcomes.forEach((outcome, i) => {
      if (outcome.status === 'fulfilled') return;
      const reason = outcome.reason instanceof Error ? outcome.reason.message : String(outcome.reason);
      this.logger.warn(`The image file ${stored[i].storageKey ?? ''} ${what} could not be removed (${reason}); images sweep removes it later.`);
    });
  }

  private async writeDish(
    tx: EntityManager,
    input: DishInput,
    image: PreparedImage | null,
    written: StoredBytes[],
    replaced: StoredBytes[],
    expected: 'absent' | 'present' | 'any' = 'any',
  ): Promise<Dish> {
    if (this.postgres) {
      // Posts of the same code wait for each other, so exactly one dish and one image remain.
      await tx.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`dish:${input.menuId}:${input.code}`]);
    }
    const dishes = tx.getRepository(Dish);
    const images = tx.getRepository(DishImage);
    const existing = await dishes.findOneBy({ menuId: input.menuId, code: input.code });
    // The upload's precondition, judged under the same lock as the write: of two posts of a new code with If-None-Match: *, one is a 412.
    if (expected === 'absent' && existing) {
      throw new PreconditionFailedException(`If-None-Match: * asks for a new dish, and menu ${input.menuId} has one with code '${input.code}': send no If-None-Match to replace it.`);
    }
    if (expected === 'present' && !existing) {
      throw new PreconditionFailedException(`If-Match: * asks to replace a dish, and menu ${input.menuId} has none with code '${input.code}': send no If-Match to add it.`);
    }
    const previousId = existing?.imageId ?? null;
    const previous = previousId
      ? await images.findOne({ select: { id: true, sha256: true, storageKey: true }, where: { id: previousId } })
      : null;
    // Replaced whole, its image too: a dish imported again without one has none (an upload always carries one).
    let imageId = image ? previousId : null;
    if (image && (previous?.sha256 !== image.sha256 || !(await this.fileHolds(previous, image)))) {
      imageId = randomUUID();
      const stored = await this.storage.put(imageId, image);
      written.push(stored);
      await images.insert({
        id: imageId,
        contentType: image.contentType,
        bytes: image.data.length,
        width: image.width,
        height: image.height,
        sha256: image.sha256,
        ...stored,
      });
    }
    const saved = await dishes.save(Object.assign(existing ?? new Dish(), input, { imageId }));
    if (previous && previous.id !== imageId) {
      await images.delete({ id: previous.id });
      replaced.push({ data: null, storageKey: previous.storageKey });
    }
    return saved;
  }

  /**
   * Whether the file of a stored image (one kept in the folder) still holds the image, checked
   * as the image served is (FileImageStorage.read: its size, then its SHA-256). The same image
   * uploaded or imported again over a file lost, cut short or changed at its size (a restore
   * that left it out, a disk fault) was taken for unchanged, and the image stayed a 500, where
   * the README's way out is to upload it again.
   */
  private async fileHolds(previous: Pick<DishImage, 'storageKey'>, image: PreparedImage): Promise<boolean> {
    if (previous.storageKey === null) return true;
    const stored = { data: null, storageKey: previous.storageKey, bytes: image.data.length, sha256: image.sha256 };
    return this.storage.folder.read(stored).then(
      () => true,
      (error: unknown) => {
        if (error instanceof DamagedImageFile) return false;
        throw error;
      },
    );
  }

  /** Every image kept in a file: its key, size and SHA-256 as stored (what `images sweep` checks the folder against). */
  async storedImageFiles(): Promise<{ key: string; bytes: number; sha256: string }[]> {
    const rows = await this.db.getRepository(DishImage).find({ select: { storageKey: true, bytes: true, sha256: true }, where: { storageKey: Not(IsNull()) } });
    return rows.map((row) => ({ key: row.storageKey!, bytes: Number(row.bytes), sha256: row.sha256 }));
  }

  /** The file names of up to `limit` images kept in files, any of them. */
  async someStoredImageKeys(limit: number): Promise<string[]> {
    const rows = await this.db.getRepository(DishImage).find({ select: { storageKey: true }, where: { storageKey: Not(IsNull()) }, take: limit });
    return rows.map((row) => row.storageKey!);
  }

  /** Those of `keys` that an image row names as its file. */
  async storedImageKeys(keys: readonly string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let at = 0; at < keys.length; at += 500) {
      const rows = await this.db.getRepository(DishImage).find({ select: { storageKey: true }, where: { storageKey: In(keys.slice(at, at + 500)) } });
      for (const row of rows) if (row.storageKey) found.add(row.storageKey);
    }
    return found;
  }

  /**
   * When the oldest transaction that may have written an image file and not yet committed its
   * row began (PostgreSQL): every write of a dish reads the dishes table first, so such a
   * transaction holds a lock on it. Null when none is open, and on SQLite (see
   * withoutImageWriters).
   */
  async oldestImageWriterStart(): Promise<Date | null> {
    if (!this.postgres) return null;
    const [row] = await this.db.query<{ oldest: Date | null }[]>(
      `SELECT min(a.xact_start) AS oldest FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
        WHERE l.locktype = 'relation' AND l.relation = $1::regclass AND l.pid <> pg_backend_pid()`,
      [this.db.getMetadata(Dish).tableName],
    );
    return row?.oldest ? new Date(row.oldest) : null;
  }

  /**
   * Runs `work` while no writer is between writing an image's file and committing its row. On
   * SQLite under the write lock (every writer, the CLI's in another process too, writes its
   * files inside a transaction begun with it); on PostgreSQL as it is (see
   * oldestImageWriterStart).
   */
  withoutImageWriters<T>(work: () => Promise<T>): Promise<T> {
    return this.postgres ? work() : inTransaction(this.db, () => work());
  }

  count(): Promise<{ menus: number; dishes: number; images: number }> {
    return Promise.all([
      this.db.getRepository(Menu).count(),
      this.db.getRepository(Dish).count(),
      this.db.getRepository(DishImage).count(),
    ]).then(([menus, dishes, images]) => ({ menus, dishes, images }));
  }
}
