import { Injectable } from '@nestjs/common';
import { ofAnotherClient } from '../auth/entitlements.js';
import { localDate } from '../common/clock.js';
import { PageTokens } from '../common/page-token.js';
import type { PagePosition } from '../common/page-token-param.js';
import { ProblemException, ValidationProblem } from '../common/problem.js';
import { ID_MAX } from '../common/query-fields.js';
import { RecordReader } from '../common/record-reader.js';
import { AppConfig } from '../config/app-config.js';
import { readDishFields } from './dish-fields.js';
import { readUploadForm, type UploadParts } from './dish-upload-form.js';
import type { DishDto, MenuDto } from './dto/menu.dto.js';
import { dishesScope, menusScope } from './dto/menus-query.dto.js';
import type { DishImage } from './entities/dish-image.entity.js';
import type { Menu } from './entities/menu.entity.js';
import { ImageRejected, imageLimits, prepareImage, type ImageLimits, type PreparedImage } from './image-inspector.js';
import { DamagedImageFile } from './image-storage.js';
import { MenusRepository, UNORDERED, type DishWithImage } from './menus.repository.js';

export interface Page<T> {
  items: T[];
  /** Token of the next page, when there is one. */
  after?: string;
}

/** An upload's form as its rules found it: the dish and image when it broke none. */
export interface CheckedForm {
  errors: string[];
  fields: ReturnType<typeof readDishFields>;
  image: PreparedImage | null;
}

export interface ImageDownload {
  contentType: string;
  etag: string;
  data: Buffer;
}

@Injectable()
export class MenusService {
  private readonly tokens: PageTokens;
  /** What an uploaded image may be, as configured. */
  private readonly imageLimits: ImageLimits;

  constructor(
    private readonly repo: MenusRepository,
    private readonly config: AppConfig,
  ) {
    this.tokens = PageTokens.fromConfig(config);
    this.imageLimits = imageLimits(config);
  }

  /** The client's active menus, a page at a time, in id order. */
  async menus(clientId: number, after: PagePosition | undefined): Promise<Page<MenuDto>> {
    const size = this.config.MENUS_PAGE_SIZE;
    const afterId = after ? Number(after[0]) : 0;
    const rows = await this.repo.activeMenus(clientId, localDate(this.config.RESULTS_TIMEZONE), afterId, size + 1);
    const items = rows.slice(0, size).map((m) => ({ id: m.id, name: m.name, startDate: m.startDate, endDate: m.endDate }));
    const last = items.at(-1);
    return { items, after: rows.length > size && last ? this.tokens.encode(menusScope(clientId), [last.id]) : undefined };
  }

  /** The dishes of one of the client's menus, by display order then id. */
  async dishes(clientId: number, menuId: number, after: PagePosition | undefined): Promise<Page<DishDto>> {
    await this.requireMenu(clientId, menuId);
    const size = this.config.MENUS_PAGE_SIZE;
    const position = after ? ([Number(after[0]), Number(after[1])] as [number, number]) : null;
    const rows = await this.repo.dishes(menuId, position, size + 1);
    const items = rows.slice(0, size);
    const last = items.at(-1)?.dish;
    return {
      items: items.map((row) => this.dishDto(row, clientId)),
      after: rows.length > size && last ? this.tokens.encode(dishesScope(clientId, menuId), [last.order ?? UNORDERED, last.id]) : undefined,
    };
  }

  /**
   * 403 for a menu id that is not one of SvcClientId's menus (which the entitlement check has
   * already matched against the credential), whether another client's or none at all: menu ids
   * are small integers, and a 404 for the ids no menu has would tell a credential which ids
   * other clients' menus have.
   */
  private async requireMenu(clientId: number, menuId: number): Promise<void> {
    const menu = await this.repo.findMenu(menuId);
    if (menu?.clientId !== clientId) throw notAMenuOf(menuId, clientId);
  }

  /**
   * The rules of an upload's form that need nothing stored: its parts, the image's bytes and
   * the dish's fields. Every broken one is listed (with `framing`, why the body could not be
   * read as a form, when it could not). `owner`: the credential, whose image takes its turn
   * among the others' in the queue of decodes.
   */
  async readForm(parts: UploadParts | undefined, framing: readonly string[] = [], abandoned?: () => boolean, owner?: string): Promise<CheckedForm> {
    if (framing.length > 0 || !parts) return { errors: framing.length > 0 ? [...framing] : ['The form is incomplete.'], fields: null, image: null };
    const { image: imageBytes, json, errors } = readUploadForm(parts);
    let image: PreparedImage | null = null;
    if (imageBytes) {
      try {
        image = await prepareImage(imageBytes, this.imageLimits, abandoned, owner);
      } catch (error) {
        if (!(error instanceof ImageRejected)) throw error;
        errors.push(error.message);
      }
    }
    let fields: ReturnType<typeof readDishFields> = null;
    if (json !== undefined) {
      const reader = new RecordReader(json, { what: "The 'json' part" });
      const menuId = reader.int('menuId', { min: 1, max: ID_MAX });
      fields = readDishFields(reader, menuId ?? 0);
      errors.push(...reader.errors);
    }
    if (errors.length === 0 && (!fields || !image)) errors.push('The form is incomplete.');
    return { errors, fields, image };
  }

  /**
   * Adds a dish, or updates the one with the same code on that menu, from a form that broke
   * no rule (see readForm): the menu must be an active one of the client. Nothing is written
   * unless all passes.
   */
  async upload(clientId: number, form: CheckedForm, precondition: () => 'absent' | 'present' | 'any' = () => 'any'): Promise<DishDto> {
    const { fields, image } = form;
    if (form.errors.length > 0 || !fields || !image) throw new ValidationProblem(form.errors.length > 0 ? form.errors : ['The form is incomplete.']);
    const menuId = fields.menuId;
    const admit = (menu: Menu | null): void => {
      // Another client's menu and a menu id none has are refused alike (see requireMenu).
      if (menu?.clientId !== clientId) throw notAMenuOf(menuId, clientId);
      // A menu as GET /menus lists them: one that has ended takes no new dishes.
      if (menu.endDate !== null && menu.endDate < localDate(this.config.RESULTS_TIMEZONE)) {
        throw new ValidationProblem([`'menuId' ${menuId} is a menu that ended on ${menu.endDate}: dishes are added to active menus (as GET /menus lists them).`]);
      }
    };
    // Refused before a transaction when it can be; judged again in the write's own, where
    // an import that ends the menu meanwhile is either seen or waits for the dish to be written.
    admit(await this.repo.findMenu(menuId));
    // The request's preconditions (If-Match, If-None-Match), once every other rule holds.
    return this.dishDto(await this.repo.saveDish(fields, image, precondition(), admit), clientId);
  }

  /** An image of one of the client's dishes, with its validator. */
  async image(clientId: number, imageId: string): Promise<ImageDownload> {
    const owned = /^[0-9a-f-]{36}$/.test(imageId) ? await this.repo.ownedImage(imageId) : null;
    if (!owned) throw new ProblemException(404, 'No image has this id.');
    if (owned.clientId !== clientId) throw ofAnotherClient('The image is not an image of a dish', clientId);
    return { contentType: owned.image.contentType, etag: `"${owned.image.sha256}"`, data: await this.imageBytes(owned.image) };
  }

  /**
   * The image's bytes. A file removed since its row was read is an image replaced meanwhile (its
   * file goes once the replacing upload has committed): no image has the id any more, a 404. A
   * file missing while its row stands, or not holding what was stored, is a fault, and stays one
   * (a 500, logged naming the file).
   */
  private async imageBytes(image: DishImage): Promise<Buffer> {
    try {
      return await this.repo.readImage(image);
    } catch (error) {
      if (error instanceof DamagedImageFile && error.missing && (await this.repo.ownedImage(image.id)) === null) {
        throw new ProblemException(404, 'No image has this id.');
      }
      throw error;
    }
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

/** The refusal of a menu id that is not one of the client's menus: the same whether another client's or none. */
function notAMenuOf(menuId: number, clientId: number): ProblemException {
  return ofAnotherClient(`Menu ${menuId} is not a menu`, clientId);
}
