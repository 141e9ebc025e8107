import { Injectable } from '@nestjs/common';
import { notEntitled } from '../auth/entitlements.js';
import { localDate } from '../common/clock.js';
import { PageTokens } from '../common/page-token.js';
import { ProblemException, ValidationProblem } from '../common/problem.js';
import { ID_MAX } from '../common/query-fields.js';
import { RecordReader } from '../common/record-reader.js';
import { AppConfig } from '../config/app-config.js';
import { readDishFields } from './dish-fields.js';
import type { DishDto, MenuDto } from './dto/menu.dto.js';
import type { DishImage } from './entities/dish-image.entity.js';
import { ImageRejected, prepareImage, type PreparedImage } from './image-inspector.js';
import { MenusRepository, type DishWithImage } from './menus.repository.js';

export interface Page<T> {
  items: T[];
  /** Token of the next page, when there is one. */
  after?: string;
}

/** The parts of an upload as the multipart reader left them. */
export interface UploadParts {
  files: { fieldname: string; originalname: string; buffer: Buffer }[];
  fields: Record<string, unknown>;
}

export interface ImageDownload {
  contentType: string;
  etag: string;
  data: Buffer;
}

@Injectable()
export class MenusService {
  private readonly tokens: PageTokens;

  constructor(
    private readonly repo: MenusRepository,
    private readonly config: AppConfig,
  ) {
    this.tokens = PageTokens.fromConfig(config);
  }

  /** The client's active menus, a page at a time, in id order. */
  async menus(clientId: number, after: string | undefined): Promise<Page<MenuDto>> {
    const scope = `menus:${clientId}`;
    const [afterId] = after ? this.tokens.decode(scope, after) : [0];
    const size = this.config.MENUS_PAGE_SIZE;
    const rows = await this.repo.activeMenus(clientId, localDate(this.config.RESULTS_TIMEZONE), Number(afterId), size + 1);
    const items = rows.slice(0, size).map((m) => ({ id: m.id, name: m.name, startDate: m.startDate, endDate: m.endDate }));
    const last = items.at(-1);
    return { items, after: rows.length > size && last ? this.tokens.encode(scope, [last.id]) : undefined };
  }

  /** The dishes of one of the client's menus, by display order then id. */
  async dishes(clientId: number, menuId: number, after: string | undefined): Promise<Page<DishDto>> {
    await this.requireMenu(clientId, menuId);
    const scope = `dishes:${clientId}:${menuId}`;
    const position = after ? this.tokens.decode(scope, after) : null;
    if (position && (position.length !== 2 || !position.every((p) => Number.isSafeInteger(p)))) {
      throw new ValidationProblem(["'after' is not a valid page token."]);
    }
    const size = this.config.MENUS_PAGE_SIZE;
    const rows = await this.repo.dishes(menuId, position as [number, number] | null, size + 1);
    const items = rows.slice(0, size);
    const last = items.at(-1)?.dish;
    return {
      items: items.map((row) => this.dishDto(row, clientId)),
      after: rows.length > size && last ? this.tokens.encode(scope, [last.order ?? 2147483647, last.id]) : undefined,
    };
  }

  /**
   * 404 for a menu that does not exist; 403 for a menu of another client than SvcClientId
   * (which the entitlement check has already matched against the credential).
   */
  private async requireMenu(clientId: number, menuId: number): Promise<void> {
    const menu = await this.repo.findMenu(menuId);
    if (!menu) throw new ProblemException(404, `Menu ${menuId} does not exist.`);
    if (menu.clientId !== clientId) throw notEntitled(`menu ${menuId}`);
  }

  /**
   * Adds a dish, or updates the one with the same code on that menu. Every broken rule of
   * the form (image and dish fields) is reported at once; nothing is written unless all pass.
   */
  async upload(clientId: number, parts: UploadParts): Promise<DishDto> {
    const errors: string[] = [];
    const imageParts = parts.files.filter((f) => f.fieldname === '' || f.fieldname === 'file');
    const unexpected = parts.files.filter((f) => f.fieldname !== '' && f.fieldname !== 'file' && f.fieldname !== 'json');
    for (const part of unexpected) errors.push(`Unexpected file part '${part.fieldname}': the image part has an empty name or 'file'.`);
    if (imageParts.length === 0) errors.push("The image part is required: a file part with an empty name or named 'file'.");
    if (imageParts.length > 1) errors.push('Send one image part only.');

    let image: PreparedImage | null = null;
    if (imageParts.length === 1) {
      try {
        image = await prepareImage(imageParts[0].buffer, {
          maxBytes: this.config.IMAGE_MAX_BYTES,
          maxPixels: this.config.IMAGE_MAX_PIXELS,
        });
      } catch (error) {
        if (!(error instanceof ImageRejected)) throw error;
        errors.push(error.message);
      }
    }

    const json = this.jsonPart(parts, errors);
    let fields: ReturnType<typeof readDishFields> = null;
    let menuId: number | null = null;
    if (json !== undefined) {
      const reader = new RecordReader(json, '');
      menuId = reader.int('menuId', { min: 1, max: ID_MAX });
      fields = readDishFields(reader, menuId ?? 0);
      errors.push(...reader.errors);
    }
    if (menuId !== null) {
      const menu = await this.repo.findMenu(menuId);
      if (!menu) errors.push(`'menuId' ${menuId} is not a menu of client ${clientId}.`);
      else if (menu.clientId !== clientId) throw notEntitled(`menu ${menuId}`);
    }
    if (errors.length > 0 || !fields || !image) throw new ValidationProblem(errors.length > 0 ? errors : ['The form is incomplete.']);

    const saved = await this.repo.saveDish(fields, image);
    const row = await this.repo.dishWithImage(saved.id);
    return this.dishDto(row!, clientId);
  }

  private jsonPart(parts: UploadParts, errors: string[]): unknown {
    const asFile = parts.files.filter((f) => f.fieldname === 'json');
    const asField = parts.fields.json;
    if (asFile.length + (asField === undefined ? 0 : 1) > 1 || Array.isArray(asField)) {
      errors.push("Send one 'json' part only.");
      return undefined;
    }
    const text = asFile[0] ? asFile[0].buffer.toString('utf8') : asField;
    if (text === undefined) {
      errors.push("The 'json' part is required: the dish as JSON.");
      return undefined;
    }
    if (typeof text !== 'string') {
      errors.push("The 'json' part must be JSON text.");
      return undefined;
    }
    try {
      return JSON.parse(text) as unknown;
    } catch {
      errors.push("The 'json' part is not valid JSON.");
      return undefined;
    }
  }

  /** An image of one of the client's dishes, with its validator. */
  async image(clientId: number, imageId: string): Promise<ImageDownload> {
    const owned = /^[0-9a-f-]{36}$/.test(imageId) ? await this.repo.ownedImage(imageId) : null;
    if (!owned) throw new ProblemException(404, 'No image has this id.');
    if (owned.clientId !== clientId) throw notEntitled('this image');
    return { contentType: owned.image.contentType, etag: `"${owned.image.sha256}"`, data: await this.repo.readImage(owned.image) };
  }

  private dishDto({ dish, image }: DishWithImage, clientId: number): DishDto {
    let keywords: string[];
    try {
      keywords = JSON.parse(dish.keywords) as string[];
    } catch {
      keywords = [];
    }
    return {
      id: dish.id,
      menuId: dish.menuId,
      code: dish.code,
      description: dish.description,
      type: dish.type,
      order: dish.order,
      expiryDate: dish.expiryDate,
      keywords,
      image: image ? this.imageDto(image, clientId) : null,
    };
  }

  private imageDto(image: Pick<DishImage, 'id' | 'contentType' | 'bytes' | 'width' | 'height'>, clientId: number): DishDto['image'] {
    return {
      contentType: image.contentType,
      bytes: image.bytes,
      width: image.width,
      height: image.height,
      url: `${this.config.baseUrl}/menus/dishes/images/${image.id}?SvcClientId=${clientId}`,
    };
  }
}
