import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsDefined, IsInt, IsOptional, Min } from 'class-validator';

/** Query strings are text: an integer-looking value becomes a number, an empty one is absent. */
export function toInteger({ value }: { value: unknown }): unknown {
  if (value === '') return undefined;
  return typeof value === 'string' && /^[+-]?\d{1,15}$/.test(value.trim()) ? Number(value) : value;
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
  description: string;
  /** Left out for optional parameters: Swagger UI would fill it in and filter by it. */
  example?: number;
}

/**
 * An integer query parameter with the message forms of the interface:
 * `'Name' must not be empty.`, `'Name' must be an integer: 'abc'.`, `'Name' must be greater than '0'.`
 */
export function IntegerParam(name: string, options: IntegerParamOptions): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      name,
      type: 'integer',
      format: 'int64',
      minimum: options.minimum,
      required: options.required,
      description: options.description,
      example: options.example,
    }),
    Transform(toInteger),
    // Listed in the order class-validator runs them; the parser reports the last one broken.
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
    description: 'The client the request is made for. Names of query parameters match case-insensitively.',
    example: 1001,
  });
