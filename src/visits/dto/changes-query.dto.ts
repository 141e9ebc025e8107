import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import {
  IsOptional,
  Validate,
  ValidatorConstraint,
  type ValidationArguments,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { dayCount, instantOfLocal } from '../../common/clock.js';
import { isPositionNumber, isQueryId, PageTokenParam } from '../../common/page-token-param.js';
import { emptyIsAbsent, ID_MAX, IntegerParam, QUERY_INTEGER_MAX, SvcClientIdParam, visitTypeCodes } from '../../common/query-fields.js';
import { queryContextOf, type QueryContext } from '../../common/query-params.js';
import { TakeMax, VISIT_TYPES_PATTERN, VisitTypesParam } from './visits-query.dto.js';

/** Default page size of the change feed (or the Take maximum, when that is smaller). */
export const CHANGES_DEFAULT_TAKE = 500;

/** The page size of a feed query: its Take, or the default within the configured maximum. */
export function changesTake(query: { Take?: number }, takeMax: number): number {
  return query.Take ?? Math.min(CHANGES_DEFAULT_TAKE, takeMax);
}

/** yyyy-mm-ddThh:mm[:ss[.fff]] with an optional zone: Z or ±hh:mm. */
const SINCE_FORMAT = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})(?::(\d{2})(\.\d{1,9})?)?(Z|[+-]\d{2}:\d{2})?$/i;

/** The last instant of the year 9999, UTC: the latest time the databases keep. */
const LAST_INSTANT = Date.parse('9999-12-31T23:59:59.999Z');

/**
 * The instant a `Since` value names: with a zone offset as given, without one as the wall
 * clock of the service's time zone. Undefined when it is not such a date-time.
 */
export function sinceInstant(value: string, zone: string): Date | undefined {
  const m = SINCE_FORMAT.exec(value);
  if (!m) return undefined;
  const [, date, hour, minute, second = '00', fraction = '', offset] = m;
  const ms = fraction ? fraction.slice(1, 4).padEnd(3, '0') : '000';
  const local = `${date}T${hour}:${minute}:${second}.${ms}`;
  // Date.parse accepts 24:00 and rolls invalid days over; a real date-time reads back the same.
  const probe = new Date(`${local}Z`);
  if (Number.isNaN(probe.getTime()) || probe.toISOString().slice(0, 23) !== local) return undefined;
  const at = offset ? new Date(Date.parse(`${local}${offset.toUpperCase()}`)) : instantOfLocal(local, zone);
  if (Number.isNaN(at.getTime())) return undefined;
  // A Since after the last instant of the year 9999 (UTC), which a local time or an offset on
  // its last day can name, starts where that instant does: no change is that late, and the
  // databases keep no later time.
  return at.getTime() > LAST_INSTANT ? new Date(LAST_INSTANT) : at;
}

/**
 * The earliest instant a feed may start from: the retention before now, rounded up to a whole
 * second. The refusal names it in whole seconds, and a Since of the very point it names is
 * taken (truncated, the named point lay up to a second before the bound, and was refused).
 */
export function oldestSince(context: QueryContext): Date {
  return new Date(Math.ceil((context.now().getTime() - context.changesRetentionDays * 86_400_000) / 1000) * 1000);
}

@ValidatorConstraint({ name: 'sinceFormat' })
class SinceFormat implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const zone = queryContextOf(args.object)?.zone ?? 'UTC';
    return typeof value !== 'string' || sinceInstant(value, zone) !== undefined;
  }
  defaultMessage(args: ValidationArguments): string {
    return `'Since' is not in the expected format yyyy-mm-ddThh:mm:ss, with an optional offset (Z or +hh:mm): '${String(args.value)}'.`;
  }
}

@ValidatorConstraint({ name: 'sinceRetained' })
class SinceRetained implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const context = queryContextOf(args.object);
    const at = typeof value === 'string' && context ? sinceInstant(value, context.zone) : undefined;
    return !at || !context || at >= oldestSince(context);
  }
  defaultMessage(args: ValidationArguments): string {
    const context = queryContextOf(args.object)!;
    const oldest = oldestSince(context).toISOString().replace(/\.000Z$/, 'Z');
    return `'Since' must not be earlier than '${oldest}': the feed keeps ${dayCount(context.changesRetentionDays)}.`;
  }
}

@ValidatorConstraint({ name: 'oneStart' })
class OneStart implements ValidatorConstraintInterface {
  validate(_: unknown, args: ValidationArguments): boolean {
    const { Since, after } = args.object as ChangesQueryDto;
    return (Since === undefined) !== (after === undefined);
  }
  defaultMessage(args: ValidationArguments): string {
    const { Since } = args.object as ChangesQueryDto;
    return Since === undefined ? "Either 'Since' or 'after' must be given." : "Only one of 'Since' and 'after' may be given.";
  }
}

/**
 * The query of GET /visits/standard/changes and /visits/plus/changes. The first call names
 * where to start (`Since`); each later call passes the `after` token of the page before.
 */
export class ChangesQueryDto {
  @SvcClientIdParam()
  SvcClientId!: number;

  @ApiProperty({
    name: 'Since',
    type: 'string',
    // No `format: date-time`: that is RFC 3339's, with an offset always, and a validating
    // client would refuse the local form (and the one without seconds) this parameter takes.
    required: false,
    description:
      'First call only: changes written at or after this point (up to five minutes before it may be included, also when it is ahead of the clock). ' +
      "An ISO 8601 date-time with an offset (2026-11-01T00:00:00Z), or without one in the service's time zone; " +
      'seconds and a fraction of them are optional, T and Z may be lower case. ' +
      'A local time the clocks skip (a spring-forward gap) names the moment they changed; one they pass twice, the first of the two. ' +
      'At most CHANGES_RETENTION_DAYS (90) days ago. Exactly one of Since and after.',
    // No example: Swagger UI would fill it in beside a pasted `after` (one of the two only), and a date goes stale.
    maxLength: 40,
    // SINCE_FORMAT, as a JSON Schema pattern (no flags: T and Z in either case spelt out), with
    // the ranges of months, days, hours, minutes, seconds and offsets that sinceInstant takes.
    pattern:
      '^\\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\\d|3[01])[Tt]([01]\\d|2[0-3]):[0-5]\\d(:[0-5]\\d(\\.\\d{1,9})?)?([Zz]|[+-]([01]\\d|2[0-3]):[0-5]\\d)?$',
  })
  @Transform(emptyIsAbsent)
  @IsOptional()
  @Validate(SinceRetained)
  @Validate(SinceFormat)
  Since?: string;

  /** Holds the last write sequence the page before read, and the brands and visit types it was read with. */
  @PageTokenParam<ChangesQueryDto>('The `paging.after` token of the page before: the next changes. Exactly one of Since and after.', {
    scope: (q) => changesScope(q),
    position: (p) => isPositionNumber(p[0]) && (p.length === 1 || (p.length === 2 && typeof p[1] === 'string')),
  })
  after?: string;

  @Validate(TakeMax)
  @IntegerParam('Take', {
    required: false,
    minimum: 1,
    minimumText: "greater than '0'",
    // The configured VISITS_TAKE_MAX is enforced by TakeMax and replaces this in the contract.
    maximum: QUERY_INTEGER_MAX,
    description: `Changed visits to return, at most 1000 (configurable); ${CHANGES_DEFAULT_TAKE} when omitted.`,
    default: CHANGES_DEFAULT_TAKE,
    // What Swagger UI fills in: a page it can show at once (500 visits are megabytes it takes long to draw).
    example: 20,
  })
  Take?: number;

  @IntegerParam('SvcBrandId', {
    required: false,
    minimum: 1,
    minimumText: "greater than '0'",
    maximum: ID_MAX,
    description: 'Only visits of this brand. A page token is bound to it.',
  })
  SvcBrandId?: number;

  @VisitTypesParam()
  VisitTypes?: string;

  /** Rule across parameters: exactly one of Since and after. */
  @Validate(OneStart)
  readonly _start?: undefined;
}

/** The query of GET /visits/plus/changes: its tokens are bound to the plus variant. */
export class PlusChangesQueryDto extends ChangesQueryDto {}

/**
 * The query a feed token is bound to: the variant, the client and the query's own filters.
 * Undefined while one of them is broken.
 */
export function changesScope(query: ChangesQueryDto): string | undefined {
  const { SvcClientId, SvcBrandId, VisitTypes } = query;
  if (!isQueryId(SvcClientId) || (SvcBrandId !== undefined && !isQueryId(SvcBrandId))) return undefined;
  if (VisitTypes !== undefined && (typeof VisitTypes !== 'string' || !VISIT_TYPES_PATTERN.test(VisitTypes))) return undefined;
  const variant = query instanceof PlusChangesQueryDto ? 'plus' : 'standard';
  return ['changes', variant, SvcClientId, SvcBrandId ?? '', visitTypeCodes(VisitTypes).join(',')].join(':');
}
