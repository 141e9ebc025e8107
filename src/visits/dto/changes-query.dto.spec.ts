import { readFileSync } from 'node:fs';
import fc from 'fast-check';
import { instantOfLocal, localDateTime } from '../../common/clock.js';
import { positionOf } from '../../common/page-token-param.js';
import { ValidationProblem } from '../../common/problem.js';
import { parseQuery } from '../../common/query-params.js';
import { queryContext, TEST_PAGE_TOKENS } from '../../../test/helpers/query-context.js';
import { ChangesQueryDto, PlusChangesQueryDto, sinceInstant } from './changes-query.dto.js';
import { propertyRuns } from '../../../test/helpers/property-runs.js';

/** Since as the published contract gives it. */
const sinceSchema = (
  JSON.parse(readFileSync('openapi/openapi.json', 'utf8')) as { paths: Record<string, { get: { parameters: { name: string; schema: { pattern: string } }[] } }> }
).paths['/visits/standard/changes'].get.parameters.find((p) => p.name === 'Since')!.schema;

describe('Since of the change feed', () => {
  it.each([
    '2026-07-01T12:00:00Z',
    '2026-07-01t12:00z',
    '2026-07-01T23:59:59.123456789+14:00',
    '2026-07-01T00:00:00-23:59',
    '2026-07-01T12:00:00+24:00',
    '2026-07-01T12:00:00+05:60',
    '2026-07-01T24:00:00',
    '2026-07-01T12:60:00',
    '2026-07-01T12:00:60',
    '2026-13-01T12:00:00',
    '2026-00-10T12:00:00',
    '2026-07-32T12:00:00',
    '2026-07-00T12:00:00',
    '2026-07-01T12:00:00+0545',
    '2026-07-01 12:00:00',
  ])("the contract's pattern takes %j exactly when the service does", (given) => {
    expect(new RegExp(sinceSchema.pattern, 'u').test(given)).toBe(sinceInstant(given, 'Europe/London') !== undefined);
  });

  it('reads a date-time with an offset as that instant', () => {
    expect(sinceInstant('2026-07-01T12:00:00Z', 'Europe/London')?.toISOString()).toBe('2026-07-01T12:00:00.000Z');
    expect(sinceInstant('2026-07-01T12:00:00+02:00', 'Europe/London')?.toISOString()).toBe('2026-07-01T10:00:00.000Z');
    expect(sinceInstant('2026-07-01T12:00:00.5-01:30', 'UTC')?.toISOString()).toBe('2026-07-01T13:30:00.500Z');
    expect(sinceInstant('2026-07-01T12:00z', 'UTC')?.toISOString()).toBe('2026-07-01T12:00:00.000Z');
    // The last day of the year 9999, as local times (whose next day has no four-digit year) and
    // with offsets that put it in the year 10000: no later than the last instant of 9999.
    for (const zone of ['Europe/London', 'Australia/Sydney', 'Etc/GMT+12', 'UTC']) {
      expect(sinceInstant('9999-12-31T23:59:59', zone)?.getTime()).toBeLessThanOrEqual(Date.parse('9999-12-31T23:59:59.999Z'));
      expect(sinceInstant('9999-12-31T09:59:59', zone)).toBeInstanceOf(Date);
    }
    expect(sinceInstant('9999-12-31T23:59:59', 'Australia/Sydney')?.toISOString()).toBe('9999-12-31T12:59:59.000Z');
    expect(sinceInstant('9999-12-31T23:59:59', 'Etc/GMT+12')?.toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(sinceInstant('9999-12-31T23:30:00-01:00', 'UTC')?.toISOString()).toBe('9999-12-31T23:59:59.999Z');
    expect(sinceInstant('9999-12-31T23:59:59-12:00', 'UTC')?.toISOString()).toBe('9999-12-31T23:59:59.999Z');
  });

  it("reads one without an offset on the wall clock of the service's zone, summer and winter", () => {
    expect(sinceInstant('2026-07-01T12:00:00', 'Europe/London')?.toISOString()).toBe('2026-07-01T11:00:00.000Z');
    expect(sinceInstant('2026-01-15T12:00:00', 'Europe/London')?.toISOString()).toBe('2026-01-15T12:00:00.000Z');
    expect(sinceInstant('2026-01-15T12:00:00', 'America/New_York')?.toISOString()).toBe('2026-01-15T17:00:00.000Z');
  });

  it('reads the years before 1000 too, as four digits', () => {
    expect(localDateTime('UTC', new Date('0050-03-01T04:05:06Z'))).toBe('0050-03-01T04:05:06');
    expect(sinceInstant('0999-12-31T23:00:00', 'UTC')?.toISOString()).toBe('0999-12-31T23:00:00.000Z');
    expect(sinceInstant('0001-01-01T00:00:00Z', 'Europe/London')?.toISOString()).toBe('0001-01-01T00:00:00.000Z');
  });

  it('refuses what is not a real date-time', () => {
    for (const text of ['2026-02-30T00:00:00Z', '2026-13-01T00:00:00', '2026-01-01T24:00:00Z', '2026-01-01', 'yesterday', '2026-01-01T00:00:00+2', ' 2026-01-01T00:00:00Z']) {
      expect([text, sinceInstant(text, 'Europe/London')]).toEqual([text, undefined]);
    }
  });

  it('finds the instant whose local time is the one given, around the clock changes too', () => {
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }), fc.constantFrom('Europe/London', 'America/New_York', 'Australia/Sydney', 'UTC'), (ms, zone) => {
        const at = new Date(Math.floor(ms / 1000) * 1000);
        const local = localDateTime(zone, at);
        const found = instantOfLocal(local, zone);
        // The same wall clock; in an overlap (clocks put back) the earlier of the two instants.
        expect(localDateTime(zone, found)).toBe(local);
        expect(found.getTime()).toBeLessThanOrEqual(at.getTime());
        expect(at.getTime() - found.getTime()).toBeLessThanOrEqual(3600_000);
      }),
      propertyRuns(2000),
    );
  });

  it('reads a local time the clocks skipped (put forward) as the moment they changed: every later wall clock is at or past it', () => {
    // London 2027-03-28 01:00 -> 02:00 (01:00Z); Sydney 2026-10-04 02:00 -> 03:00 (16:00Z the day before); New York 2027-03-14 02:00 -> 03:00 (07:00Z).
    expect(instantOfLocal('2027-03-28T01:30:00', 'Europe/London').toISOString()).toBe('2027-03-28T01:00:00.000Z');
    expect(instantOfLocal('2027-03-28T01:00:00', 'Europe/London').toISOString()).toBe('2027-03-28T01:00:00.000Z');
    expect(instantOfLocal('2026-10-04T02:59:59', 'Australia/Sydney').toISOString()).toBe('2026-10-03T16:00:00.000Z');
    expect(sinceInstant('2027-03-14T02:15:30.250', 'America/New_York')?.toISOString()).toBe('2027-03-14T07:00:00.000Z');
    fc.assert(
      fc.property(fc.integer({ min: Date.UTC(2020, 0, 1), max: Date.UTC(2030, 0, 1) }), fc.constantFrom('Europe/London', 'America/New_York', 'Australia/Sydney'), (ms, zone) => {
        // A wall clock read off the UTC calendar: now and then one the zone skipped.
        const wall = new Date(Math.floor(ms / 1000) * 1000).toISOString().slice(0, 19);
        const found = instantOfLocal(wall, zone).getTime();
        expect(localDateTime(zone, new Date(found)) >= wall).toBe(true);
        expect(localDateTime(zone, new Date(found - 1000)) < wall).toBe(true);
      }),
      propertyRuns(2000),
    );
  });
});

describe('the oldest Since', () => {
  const errorsOf = (since: string, now: string): string[] => {
    try {
      parseQuery(ChangesQueryDto, new URLSearchParams({ SvcClientId: '1001', Since: since }).toString(), queryContext({ now: () => new Date(now) }));
      return [];
    } catch (error) {
      if (error instanceof ValidationProblem) return error.errors ?? [];
      throw error;
    }
  };

  it('is named in whole seconds, and a Since of the point named is taken', () => {
    // 90 days before 2026-12-01T12:00:00.700Z is 2026-09-02T12:00:00.700Z: the first whole second taken is :01.
    const now = '2026-12-01T12:00:00.700Z';
    expect(errorsOf('2026-09-02T12:00:00Z', now)).toEqual(["'Since' must not be earlier than '2026-09-02T12:00:01Z': the feed keeps 90 days."]);
    expect(errorsOf('2026-09-02T12:00:00.999Z', now)).toHaveLength(1);
    expect(errorsOf('2026-09-02T12:00:01Z', now)).toEqual([]);
    // On a whole second the bound is that second.
    expect(errorsOf('2026-09-02T11:59:59.999Z', '2026-12-01T12:00:00Z')).toEqual(["'Since' must not be earlier than '2026-09-02T12:00:00Z': the feed keeps 90 days."]);
    expect(errorsOf('2026-09-02T12:00:00Z', '2026-12-01T12:00:00Z')).toEqual([]);
  });

  it('says a retention of one day in the singular', () => {
    try {
      parseQuery(ChangesQueryDto, 'SvcClientId=1001&Since=2026-11-01T00:00:00Z', queryContext({ changesRetentionDays: 1 }));
      throw new Error('taken');
    } catch (error) {
      expect(error).toBeInstanceOf(ValidationProblem);
      expect((error as ValidationProblem).errors).toEqual(["'Since' must not be earlier than '2026-11-30T12:00:00Z': the feed keeps 1 day."]);
    }
  });
});

describe('the feed token', () => {
  const tokens = TEST_PAGE_TOKENS;
  const context = queryContext();
  const read = (dto: typeof ChangesQueryDto, query: Record<string, string>): number | string[] => {
    try {
      return Number(positionOf(parseQuery(dto, new URLSearchParams(query).toString(), context))?.[0]);
    } catch (error) {
      if (error instanceof ValidationProblem) return error.errors ?? [];
      throw error;
    }
  };

  it('is bound to the variant, the client, the brand and the visit types (in any order and case)', () => {
    const token = tokens.encode('changes:standard:1001:6:MV,OF', [9]);
    expect(read(ChangesQueryDto, { SvcClientId: '1001', SvcBrandId: '6', VisitTypes: 'of,mv', after: token })).toBe(9);
    const another = ["'after' is a page token of another query."];
    expect(read(PlusChangesQueryDto, { SvcClientId: '1001', SvcBrandId: '6', VisitTypes: 'MV,OF', after: token })).toEqual(another);
    expect(read(ChangesQueryDto, { SvcClientId: '1001', SvcBrandId: '7', VisitTypes: 'MV,OF', after: token })).toEqual(another);
    expect(read(ChangesQueryDto, { SvcClientId: '1001', SvcBrandId: '6', after: token })).toEqual(another);
    expect(read(ChangesQueryDto, { SvcClientId: '1002', SvcBrandId: '6', VisitTypes: 'MV,OF', after: token })).toEqual(another);
    expect(read(PlusChangesQueryDto, { SvcClientId: '1001', after: tokens.encode('changes:plus:1001::', [0]) })).toBe(0);
  });

  it('holds one write sequence, and is not matched against broken filters', () => {
    for (const position of [[], [-1], [1.5], ['9'], [9, 1]]) {
      expect(read(ChangesQueryDto, { SvcClientId: '1001', after: tokens.encode('changes:standard:1001::', position as number[]) })).toEqual([
        "'after' is not a valid page token.",
      ]);
    }
    expect(read(ChangesQueryDto, { SvcClientId: '1001', VisitTypes: 'M1', after: tokens.encode('changes:standard:1001::', [1]) })).toEqual([
      "'VisitTypes' must be 2 alpha characters: 'M1'.",
    ]);
  });
});
