import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { PAGE_TOKEN_MAX_LENGTH, PAGE_TOKEN_PATTERN } from '../../common/page-token.js';
import { emptyIsAbsent, ID_MAX, IntegerParam, SvcClientIdParam } from '../../common/query-fields.js';

function AfterParam(): PropertyDecorator {
  return (target, key) => {
    ApiProperty({
      name: 'after',
      type: 'string',
      required: false,
      description: 'The page token from `paging.after` of the previous page (or the `Link: rel="next"` header).',
      maxLength: PAGE_TOKEN_MAX_LENGTH,
      pattern: PAGE_TOKEN_PATTERN,
    })(target, key);
    MaxLength(PAGE_TOKEN_MAX_LENGTH, { message: "'after' is not a valid page token." })(target, key);
    IsString({ message: "'after' is not a valid page token." })(target, key);
    IsOptional()(target, key);
    Transform(emptyIsAbsent)(target, key);
  };
}

export class MenusQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;

  @AfterParam()
  after?: string;
}

export class DishesQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;

  @IntegerParam('menuId', {
    required: true,
    minimum: 1,
    minimumText: "greater than '0'",
    maximum: ID_MAX,
    description: 'A menu id as returned by GET /menus.',
    example: 101,
  })
  menuId!: number;

  @AfterParam()
  after?: string;
}

export class ClientQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;
}
