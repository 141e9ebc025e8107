import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ISO_DATE_TIME } from '../dish-fields.js';

export class MenuDto {
  @ApiProperty({ type: 'integer', format: 'int32', example: 101, description: 'Use as `menuId`.' })
  id!: number;

  @ApiProperty({ example: 'Acme Grill Autumn Menu' })
  name!: string;

  @ApiProperty({ format: 'date', example: '2026-10-01' })
  startDate!: string;

  @ApiProperty({ type: String, format: 'date', nullable: true, example: null, description: 'Null: no end date.' })
  endDate!: string | null;
}

export class DishImageDto {
  @ApiProperty({ enum: ['image/jpeg', 'image/png', 'image/webp'] })
  contentType!: string;

  @ApiProperty({ type: 'integer', example: 48213 })
  bytes!: number;

  @ApiProperty({ type: 'integer', example: 400 })
  width!: number;

  @ApiProperty({ type: 'integer', example: 300 })
  height!: number;

  @ApiProperty({
    format: 'uri',
    example: 'https://results.example.com/menus/dishes/images/0b6f3c1e-1a2b-4c3d-8e9f-0a1b2c3d4e5f?SvcClientId=1001',
    description: 'GET it with the same svc-api-key and bearer token.',
  })
  url!: string;
}

export class DishDto {
  @ApiProperty({ type: 'integer', example: 12 })
  id!: number;

  @ApiProperty({ type: 'integer', format: 'int32', example: 101 })
  menuId!: number;

  @ApiProperty({ maxLength: 50, example: 'AG-STK-01' })
  code!: string;

  @ApiProperty({ maxLength: 250, example: 'Ribeye steak, 10oz, with triple-cooked chips' })
  description!: string;

  @ApiProperty({ maxLength: 50, example: 'Main' })
  type!: string;

  @ApiProperty({ type: 'integer', format: 'int32', nullable: true, example: 1, description: 'Display order on the menu.' })
  order!: number | null;

  @ApiProperty({ type: String, format: 'date', nullable: true, example: '2026-12-31' })
  expiryDate!: string | null;

  @ApiProperty({ type: [String], example: ['beef', 'gluten-free'] })
  keywords!: string[];

  @ApiProperty({ type: DishImageDto, nullable: true })
  image!: DishImageDto | null;
}

export class PagingDto {
  @ApiPropertyOptional({ description: 'Present only when another page exists: pass it back as `after`.' })
  after?: string;
}

class MenusData {
  @ApiProperty({ type: [MenuDto] })
  menus!: MenuDto[];
}

class DishesData {
  @ApiProperty({ type: [DishDto] })
  dishes!: DishDto[];
}

class DishData {
  @ApiProperty({ type: DishDto })
  dish!: DishDto;
}

export class MenusPageDto {
  @ApiProperty({ type: MenusData })
  data!: MenusData;

  @ApiProperty({ type: PagingDto })
  paging!: PagingDto;
}

export class DishesPageDto {
  @ApiProperty({ type: DishesData })
  data!: DishesData;

  @ApiProperty({ type: PagingDto })
  paging!: PagingDto;
}

export class DishResponseDto {
  @ApiProperty({ type: DishData })
  data!: DishData;
}

/** The largest `json` part of a dish upload, in bytes. */
export const DISH_JSON_PART_MAX_BYTES = 64 * 1024;

/**
 * The dish a `json` part holds, for typed clients: they build it, then send its JSON text.
 * The rules are readDishFields' (dish-fields.ts), which the service applies.
 */
export class DishInputDto {
  @ApiProperty({ type: 'integer', format: 'int32', minimum: 1, maximum: 2147483647, description: 'A menu of the client, as GET /menus lists them (one that has ended is refused).', example: 101 })
  menuId!: number;

  @ApiProperty({ minLength: 1, maxLength: 50, description: "The dish's key on its menu: a dish of this code on the menu is replaced.", example: 'AG-STK-03' })
  code!: string;

  @ApiProperty({ minLength: 1, maxLength: 250, example: 'Ribeye steak, 10oz' })
  description!: string;

  @ApiProperty({ minLength: 1, maxLength: 50, example: 'Main' })
  type!: string;

  @ApiPropertyOptional({ type: 'integer', format: 'int32', nullable: true, minimum: -2147483648, maximum: 2147483647, description: 'Display order on the menu; absent or null: none.', example: 1 })
  order?: number | null;

  @ApiPropertyOptional({
    type: 'string',
    nullable: true,
    maxLength: 35,
    pattern: ISO_DATE_TIME.source,
    description: 'yyyy-mm-dd (a day of the years 0001 to 9999), or an ISO 8601 date-time of which the date (as written, whatever its offset) is kept; absent or null: none.',
    example: '2026-12-31',
  })
  expiryDate?: string | null;

  @ApiPropertyOptional({ type: 'string', isArray: true, nullable: true, items: { type: 'string', minLength: 1, maxLength: 50 }, description: 'Absent or null: none.', example: ['beef'] })
  keywords?: string[] | null;
}

/**
 * The multipart form of POST /menus/dishes, for the contract and Swagger UI's file chooser.
 * The image part's `x-max-bytes` is the configured IMAGE_MAX_BYTES, set when the contract is
 * built: not `maxLength`, which counts a string's characters, and which generators turn into
 * a length check that a file does not have (openapi-zod-client's output did not compile).
 */
export class DishUploadDto {
  @ApiProperty({
    type: 'string',
    format: 'binary',
    description:
      'The image: JPEG, PNG or WebP, at most `x-max-bytes` bytes (IMAGE_MAX_BYTES, 5 MiB by default) and IMAGE_MAX_PIXELS ' +
      '(40 megapixels by default); an animation as a WebP (an animated PNG is refused). The part may have an empty name.',
  })
  file!: unknown;

  @ApiProperty({
    type: 'string',
    minLength: 2,
    // The part may hold 64 KiB of UTF-8. A JSON Schema length counts characters, each at least
    // one byte: no longer text can be taken, and no shorter one is refused by a client that
    // checks the schema (a quarter of it, the characters that always fit, refused valid dishes).
    maxLength: DISH_JSON_PART_MAX_BYTES,
    description:
      'The JSON text of a `DishInputDto` object (its schema is in the components), at most 64 KiB of UTF-8 (`maxLength` ' +
      'counts characters: a text of fewer is still refused when its UTF-8 is longer than 64 KiB): `menuId` ' +
      '(integer, 1 to 2147483647, a menu of the client), `code` (text, 1 to 50 characters), `description` (1 to 250), ' +
      '`type` (1 to 50), `order` (optional 32-bit integer), `expiryDate` (optional, yyyy-mm-dd, or a date-time whose date is kept), `keywords` (optional ' +
      'array of non-empty texts of at most 50 characters); no text may hold a NUL character or an unpaired UTF-16 surrogate. Field names are case-sensitive. The dish of that `code` on ' +
      'the menu is replaced whole: a field left out is stored as null (`keywords` as none), not kept from before.',
    example: JSON.stringify({
      menuId: 101,
      code: 'AG-STK-03',
      description: 'Ribeye steak, 10oz',
      type: 'Main',
      order: 1,
      expiryDate: '2026-12-31',
      keywords: ['beef'],
    }),
  })
  json!: string;
}
