import fc from 'fast-check';
import { instantOfLocal, localDateTime } from '../../common/clock.js';
import { sinceInstant } from './changes-query.dto.js';

describe('Since of the change feed', () => {
  it('reads a date-time with an offset as that instant', () => {
    expect(sinceInstant('2026-07-01T12:00:00Z', 'Europe/London')?.toISOString()).toBe('2026-07-01T12:00:00.000Z');
    expect(sinceInstant('2026-07-01T12:00:00+02:00', 'Europe/London')?.toISOString()).toBe('2026-07-01T10:00:00.000Z');
    expect(sinceInstant('2026-07-01T12:00:00.5-01:30', 'UTC')?.toISOString()).toBe('2026-07-01T13:30:00.500Z');
    expect(sinceInstant('2026-07-01T12:00z', 'UTC')?.toISOString()).toBe('2026-07-01T12:00:00.000Z');
  });

  it("reads one without an offset on the wall clock of the service's zone, summer and winter", () => {
    expect(sinceInstant('2026-07-01T12:00:00', 'Europe/London')?.toISOString()).toBe('2026-07-01T11:00:00.000Z');
    expect(sinceInstant('2026-01-15T12:00:00', 'Europe/London')?.toISOString()).toBe('2026-01-15T12:00:00.000Z');
    expect(sinceInstant('2026-01-15T12:00:00', 'America/New_York')?.toISOString()).toBe('2026-01-15T17:00:00.000Z');
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
      { numRuns: 2000 },
    );
  });
});
