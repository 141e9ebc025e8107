import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsInt, IsOptional, Max, Min } from 'class-validator';

/** Largest id of a client, brand or menu: their columns are 32-bit integers. */
export const ID_MAX = 2_147_483_647;

/** Largest integer a query value may have: 15 digits, all exact as a JavaScript number. */
export const QUERY_INTEGER_MAX = 999_999_999_999_999;

/**
 * A sign, leading zeros and the digits after them (the last zero of a zero). The digits start
 * at a nonzero digit, so that the zeros and the digits never take the same characters: with
 * `0*(\d+?)` a value of thousands of zeros and a letter was tried at every split between them,
 * 50 ms of CPU for one query string.
 */
const INTEGER_TEXT = /^([+-]?)0*([1-9]\d*|0)$/;

/**
 * Query strings are text: an integer-looking value becomes a number, an empty one is absent.
 * One of more than 15 significant digits is beyond every bound the parameters have: it
 * becomes the largest number of its sign, so that the rules say which bound it breaks rather
 * than that it is no integer.
 */
export function toInteger({ value }: { value: unknown }): unknown {
  if (value === '') return undefined;
  const integer = typeof value === 'string' ? INTEGER_TEXT.exec(value) : null;
  if (integer === null) return value;
  const [, sign, digits] = integer;
  if (digits.length <= 15) return Number(`${sign}${digits}`);
  return sign === '-' ? -Number.MAX_VALUE : Number.MAX_VALUE;
}

/** Visit type codes of a `VisitTypes` value (text or list): upper-case, each once, sorted; empty for none. */
export function visitTypeCodes(types: string[] | string | undefined): string[] {
  const codes = typeof types === 'string' ? types.split(',') : (types ?? []);
  return [...new Set(codes.filter((t) => t !== '').map((t) => t.toUpperCase()))].sort();
}

/** An empty query value is an absent one. */
export function emptyIsAbsent({ value }: { value: unknown }): unknown {
  return value === '' ? undefined : value;
}

export interface IntegerParamOptions {
  required: boolean;
  minimum: number;
  /** Comparison word of the minimum rule: `greater than '0'` or `greater than or equal to '0'`. */
  minimumText: string;
  /** The largest value accepted ({@link ID_MAX} for ids). */
  maximum: number;
  description: string;
  /** Left out for optional parameters: Swagger UI would fill it in and filter by it. */
  example?: number;
  /** What an absent optional parameter is taken as, stated in the contract. */
  default?: number;
}

/**
 * An integer query parameter with the message forms of the interface:
 * `'Name' must not be empty.`, `'Name' must be an integer: 'abc'.`, `'Name' must be greater than '0'.`,
 * `'Name' must be less than or equal to '2147483647'.` The contract's schema states the same bounds.
 */
export function IntegerParam(name: string, options: IntegerParamOptions): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      name,
      type: 'integer',
      format: options.maximum <= ID_MAX ? 'int32' : 'int64',
      minimum: options.minimum,
      maximum: options.maximum,
      required: options.required,
      description: options.description,
      example: options.example,
      default: options.default,
    }),
    Transform(toInteger),
    // Listed in the order class-validator runs them; the parser reports the last one broken.
    Max(options.maximum, { message: `'${name}' must be less than or equal to '${options.maximum}'.` }),
    Min(options.minimum, { message: `'${name}' must be ${options.minimumText}.` }),
    IsInt({ message: (a) => `'${name}' must be an integer: '${String(a.value)}'.` }),
    options.required ? IsDefined({ message: `'${name}' must not be empty.` }) : IsOptional(),
  );
}

/** `SvcClientId`: the client the request is made for. */
export const SvcClientIdParam = (): PropertyDecorator =>
  IntegerParam('SvcClientId', {
    required: true,
    minimum: 1,
    minimumText: "greater than '0'",
    maximum: ID_MAX,
    description: 'The client the request is made for. Names of query parameters match case-insensitively.',
    example: 1001,
  });
