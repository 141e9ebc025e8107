import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsDefined,
  IsOptional,
  Matches,
  Validate,
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { dayCount, daysBetween } from '../../common/clock.js';
import { emptyIsAbsent, ID_MAX, IntegerParam, QUERY_INTEGER_MAX, SvcClientIdParam } from '../../common/query-fields.js';
import { queryContextOf } from '../../common/query-params.js';
import { calendarDateFault, isCalendarDate } from '../../common/record-reader.js';

@ValidatorConstraint({ name: 'calendarDate' })
class CalendarDate implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'string' && isCalendarDate(value);
  }
  defaultMessage(args: ValidationArguments): string {
    return `'${args.property}' ${calendarDateFault(String(args.value))}`;
  }
}

@ValidatorConstraint({ name: 'beforeToday' })
class BeforeToday implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const context = queryContextOf(args.object);
    return typeof value !== 'string' || !context || value < context.today();
  }
  defaultMessage(args: ValidationArguments): string {
    return `'${args.property}' must not be today or in the future.`;
  }
}

@ValidatorConstraint({ name: 'takeMax' })
export class TakeMax implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const max = queryContextOf(args.object)?.takeMax;
    return typeof value !== 'number' || max === undefined || value <= max;
  }
  defaultMessage(args: ValidationArguments): string {
    return `'Take' must be less than or equal to '${queryContextOf(args.object)?.takeMax}'.`;
  }
}

function validDates(object: VisitsQueryDto): [string, string] | null {
  const { FromDate: from, ToDate: to } = object;
  return typeof from === 'string' && typeof to === 'string' && isCalendarDate(from) && isCalendarDate(to) ? [from, to] : null;
}

@ValidatorConstraint({ name: 'dateOrder' })
class DateOrder implements ValidatorConstraintInterface {
  validate(_: unknown, args: ValidationArguments): boolean {
    const dates = validDates(args.object as VisitsQueryDto);
    return !dates || dates[1] >= dates[0];
  }
  defaultMessage(): string {
    return "'ToDate' must be greater than or equal to 'FromDate'.";
  }
}

@ValidatorConstraint({ name: 'dateRange' })
class DateRange implements ValidatorConstraintInterface {
  validate(_: unknown, args: ValidationArguments): boolean {
    const dates = validDates(args.object as VisitsQueryDto);
    const max = queryContextOf(args.object)?.maxRangeDays;
    // Both dates count: 2024-01-01 to 2024-01-31 is a range of 31 days.
    return !dates || max === undefined || dates[1] < dates[0] || daysBetween(dates[0], dates[1]) + 1 <= max;
  }
  defaultMessage(args: ValidationArguments): string {
    return `The range from 'FromDate' to 'ToDate' must not exceed ${dayCount(queryContextOf(args.object)?.maxRangeDays ?? 0)}.`;
  }
}

function DateParam(name: string, description: string): PropertyDecorator {
  return (target, key) => {
    ApiProperty({ name, type: 'string', format: 'date', required: true, description, example: '2026-11-01', pattern: '^\\d{4}-\\d{2}-\\d{2}$' })(target, key);
    Validate(BeforeToday)(target, key);
    Validate(CalendarDate)(target, key);
    IsDefined({ message: `'${name}' must not be empty.` })(target, key);
    Transform(emptyIsAbsent)(target, key);
  };
}

/** `VisitTypes`: comma-separated 2-letter visit type codes, any case. */
/** A `VisitTypes` value as its rule takes it: 2-letter codes, comma-separated. */
export const VISIT_TYPES_PATTERN = /^[A-Za-z]{2}(,[A-Za-z]{2})*$/;

export function VisitTypesParam(): PropertyDecorator {
  return applyDecorators(
    ApiProperty({
      name: 'VisitTypes',
      type: 'string',
      required: false,
      description:
        'Comma-separated 2-letter visit type codes, for example MV,OF (MV mystery visit, OF online feedback, ' +
        'TA third-party review). Omitted: every type the credential may read.',
      pattern: VISIT_TYPES_PATTERN.source,
    }),
    Transform(emptyIsAbsent),
    IsOptional(),
    Matches(VISIT_TYPES_PATTERN, {
      message: (a) => `'VisitTypes' must be 2 alpha characters: '${String(a.value)}'.`,
    }),
  );
}

/**
 * The query of GET /visits/standard and /visits/plus, with every rule of the interface.
 * Names match case-insensitively; each violated rule is reported, all at once.
 */
export class VisitsQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;

  @DateParam('FromDate', "First day of the visits (their local date), yyyy-mm-dd (the years 0001 to 9999); before today in the service's time zone.")
  FromDate!: string;

  @DateParam('ToDate', 'Last day of the visits, inclusive; on or after FromDate, before today. The range is at most 31 days (configurable).')
  ToDate!: string;

  @IntegerParam('Skip', {
    required: true,
    minimum: 0,
    minimumText: "greater than or equal to '0'",
    maximum: QUERY_INTEGER_MAX,
    description: 'Visits to skip, in the order visitDateTime then visitId.',
    example: 0,
  })
  Skip!: number;

  @Validate(TakeMax)
  @IntegerParam('Take', {
    required: true,
    minimum: 1,
    minimumText: "greater than '0'",
    // The configured VISITS_TAKE_MAX is enforced by TakeMax and replaces this in the contract.
    maximum: QUERY_INTEGER_MAX,
    description:
      'Visits to return, at most the maximum the service is configured with (1000 by default). A page shorter than Take is the last; when it is equal, ' +
      'repeat with Skip increased by Take.',
    example: 100,
  })
  Take!: number;

  @IntegerParam('SvcBrandId', {
    required: false,
    minimum: 1,
    minimumText: "greater than '0'",
    maximum: ID_MAX,
    description:
      'Only visits of this brand (for example 5). Use only when the operator instructs it. ' +
      'Omitted: every brand the credential may read.',
  })
  SvcBrandId?: number;

  @VisitTypesParam()
  VisitTypes?: string;

  /** Rule across parameters: ToDate on or after FromDate. */
  @Validate(DateOrder)
  readonly _order?: undefined;

  /** Rule across parameters: the range within the configured number of days. */
  @Validate(DateRange)
  readonly _range?: undefined;
}

