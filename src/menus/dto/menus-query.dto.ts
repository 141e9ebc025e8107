import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, IsString, MaxLength } from 'class-validator';
import { emptyIsAbsent, IntegerParam, SvcClientIdParam } from '../../common/query-fields.js';

function AfterParam(): PropertyDecorator {
  return (target, key) => {
    ApiProperty({
      name: 'after',
      type: 'string',
      required: false,
      description: 'The page token from `paging.after` of the previous page (or the `Link: rel="next"` header).',
    })(target, key);
    MaxLength(2048, { message: "'after' is not a valid page token." })(target, key);
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
