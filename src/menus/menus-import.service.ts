import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { Inject, Injectable } from '@nestjs/common';
import { ClientsService } from '../clients/clients.service.js';
import { rejectedAt, type ImportReport } from '../common/import-report.js';
import { readAllRecords } from '../common/record-file.js';
import { RecordReader } from '../common/record-reader.js';
import { AppConfig } from '../config/app-config.js';
import { Menu } from './entities/menu.entity.js';
import { ImageRejected, imageLimits, imageTooLargeMessage, prepareImage, type PreparedImage } from './image-inspector.js';
import { FileImageStorage, type ImageStorage } from './image-storage.js';
import { type DishInput, IMAGE_STORAGE, MenusRepository } from './menus.repository.js';
import { OperatorError } from '../common/operator-error.js';
import { readDishFields } from './dish-fields.js';

/** How many of the database's image files an import looks for in its folder before it writes there. */
const LOOKED_FOR = 200;

type MenuWithDishes = { menu: Menu; dishes: { dish: DishInput; image: PreparedImage | null }[] };

/**
 * Imports a client's menus with their dishes (JSON: an array of menus, each with
 * `id`, `name`, `startDate`, optional `endDate` and `dishes`; a dish may name an `image`
 * file relative to the import file). A file is written whole or not at all.
 */
@Injectable()
export class MenusImportService {
  constructor(
    private readonly repo: MenusRepository,
    private readonly clients: ClientsService,
    private readonly config: AppConfig,
    @Inject(IMAGE_STORAGE) private readonly storage: ImageStorage,
  ) {}

  /** The client of each of these menu ids that a menu has here. */
  async clientsOf(ids: number[]): Promise<Map<number, number>> {
    const found = new Map<number, number>();
    for (const id of ids) {
      const menu = await this.repo.findMenu(id);
      if (menu) found.set(id, menu.clientId);
    }
    return found;
  }

  /** `force`: write images into a folder that holds none of the database's image files (see refuseAnotherFolder). */
  async importFile(clientId: number, path: string, { force = false }: { force?: boolean } = {}): Promise<ImportReport> {
    await this.clients.requireClient(clientId);
    const report: ImportReport = { file: path, imported: 0, rejected: [] };
    const menus: MenuWithDishes[] = [];
    // The ids of `menus`: a search of the menus read before each one took time with the square of their number.
    const ids = new Set<number>();
    // The file's images are held until it is written, all at once: their bytes together are bounded.
    const images = { left: this.config.MENUS_IMPORT_IMAGES_MB * 1024 * 1024 };
    for (const record of await readAllRecords(path)) {
      if (record.error !== undefined) {
        report.rejected.push(rejectedAt(record, [record.error]));
        continue;
      }
      const errors: string[] = [];
      const menu = await this.readMenu(clientId, record.value, dirname(path), errors, images, record.text);
      // One menu twice in a file would be written as the two merged: which is meant is the operator's to say.
      if (menu && ids.has(menu.menu.id)) errors.push(`menu ${menu.menu.id} appears more than once in the file.`);
      if (menu && errors.length === 0) {
        menus.push(menu);
        ids.add(menu.menu.id);
      } else report.rejected.push(rejectedAt(record, errors));
    }
    if (report.rejected.length === 0) {
      if (!force && menus.some((m) => m.dishes.some((d) => d.image !== null))) await this.refuseAnotherFolder();
      await this.repo.saveMenus(menus);
      report.imported = menus.length;
    }
    return report;
  }

  /**
   * Refuses to write image files into a folder that holds none of the database's: run with
   * another IMAGE_STORAGE_DIR than the service's, an import wrote its images where the service
   * never reads them, exit 0, and each answered 500 from then on. Up to LOOKED_FOR of the
   * database's image files are looked for; a database with none (a new one) cannot tell. The
   * service's own folder whose files were all lost (a restore that left them out) looks the
   * same, and an import writing them again is the way out: it goes with `force`.
   */
  private async refuseAnotherFolder(): Promise<void> {
    if (!(this.storage instanceof FileImageStorage)) return;
    const keys = await this.repo.someStoredImageKeys(LOOKED_FOR);
    if (keys.length === 0) return;
    for (const key of keys) if ((await this.storage.sizeOf(key)) !== null) return;
    throw new OperatorError(
      `IMAGE_STORAGE_DIR ${this.storage.dir} holds none of the files of the database's images (${keys.length} looked for): ` +
        'the service keeps them in another folder, and would not serve the images this import wrote here. ' +
        'Run it with the IMAGE_STORAGE_DIR the service runs with (images sweep --verify --dry-run lists images whose files are missing), ' +
        'or with --force if this is that folder and the files were lost. Nothing was written.',
    );
  }

  private async readMenu(
    clientId: number,
    value: unknown,
    folder: string,
    errors: string[],
    images: { left: number },
    textValues?: boolean,
  ): Promise<MenuWithDishes | null> {
    const r = new RecordReader(value, { textValues });
    const id = r.id('id');
    const name = r.string('name', { max: 200 });
    const startDate = r.date('startDate');
    const endDate = r.date('endDate', { required: false });
    if (startDate !== null && endDate !== null && endDate < startDate) r.fail('endDate', `must be on or after 'startDate' (${startDate}): '${endDate}'.`);
    const dishValues = r.array('dishes', { required: false }) ?? [];
    if (id !== null) {
      const existing = await this.repo.findMenu(id);
      if (existing && existing.clientId !== clientId) r.errors.push(`menu ${id} belongs to client ${existing.clientId}.`);
    }
    const dishes: MenuWithDishes['dishes'] = [];
    const codes = new Set<string>();
    for (const [i, dishValue] of dishValues.entries()) {
      const d = r.nested(dishValue, `dishes[${i}].`);
      const fields = readDishFields(d, id ?? 0);
      const imagePath = d.string('image', { required: false, max: 500 });
      r.adopt(d);
      if (fields && codes.has(fields.code)) r.errors.push(`'dishes[${i}].code' '${fields.code}' appears twice on menu ${id}.`);
      if (fields) codes.add(fields.code);
      let image: PreparedImage | null = null;
      if (imagePath === '') r.errors.push(`'dishes[${i}].image' must be the path of an image file, or left out for none.`);
      else if (imagePath !== null && images.left < 0) r.errors.push(imagesPastBudget(i, this.config.MENUS_IMPORT_IMAGES_MB));
      else if (imagePath !== null) {
        try {
          const limits = imageLimits(this.config);
          image = await prepareImage(await readImageFile(resolve(folder, imagePath), imagePath, limits.maxBytes), limits);
          images.left -= image.data.length;
          if (images.left < 0) {
            r.errors.push(imagesPastBudget(i, this.config.MENUS_IMPORT_IMAGES_MB));
            image = null;
          }
        } catch (error) {
          const reason = error instanceof ImageRejected ? error.message : `cannot read '${imagePath}'.`;
          r.errors.push(`'dishes[${i}].image': ${reason}`);
        }
      }
      if (fields) dishes.push({ dish: fields, image });
    }
    errors.push(...r.errors);
    if (!r.ok || id === null || name === null || startDate === null) return null;
    return { menu: Object.assign(new Menu(), { id, clientId, name, startDate, endDate }), dishes };
  }
}

/** Why a dish's image is refused once the file's images together have passed MENUS_IMPORT_IMAGES_MB. */
function imagesPastBudget(dish: number, mb: number): string {
  return `'dishes[${dish}].image': the images of the file are more than ${mb} MiB together (MENUS_IMPORT_IMAGES_MB), all held until the file is written: import its menus in several files.`;
}

/**
 * An image file's bytes, read no further than the size limit: a larger file is refused
 * without being read whole, and what is no regular file (a device such as /dev/zero, a pipe,
 * a folder) is refused before it is read at all. Opened without waiting, as a pipe would.
 */
async function readImageFile(path: string, named: string, maxBytes: number): Promise<Buffer> {
  const handle = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const info = await handle.stat();
    if (!info.isFile()) throw new ImageRejected(`cannot read '${named}': it is not a file.`);
    if (info.size > maxBytes) throw new ImageRejected(imageTooLargeMessage(maxBytes));
    // Read into a buffer of the file's size (and a byte more, to see it grew): one of the limit's
    // size was kept by the image made of it, 5 MB of the process's memory reserved for each image
    // of a menus file, however small.
    let bytes = Buffer.allocUnsafe(Math.min(info.size, maxBytes) + 1);
    let length = 0;
    for (;;) {
      if (length === bytes.length) {
        // The file grew since: read on, to its end or to one byte past the limit.
        if (bytes.length > maxBytes) break;
        const larger = Buffer.allocUnsafe(maxBytes + 1);
        bytes.copy(larger, 0, 0, length);
        bytes = larger;
      }
      const { bytesRead } = await handle.read(bytes, length, bytes.length - length, length);
      if (bytesRead === 0) break;
      length += bytesRead;
    }
    if (length > maxBytes) throw new ImageRejected(imageTooLargeMessage(maxBytes));
    return bytes.subarray(0, length);
  } finally {
    await handle.close();
  }
}
