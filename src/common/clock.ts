/**
 * Local wall-clock dates in the service's time zone (RESULTS_TIMEZONE). The interface's
 * date-times carry no offset: they are the venue's local time.
 */
const formats = new Map<string, Intl.DateTimeFormat>();

/** One formatter per zone: building one costs far more than using it. */
function formatFor(zone: string): Intl.DateTimeFormat {
  let format = formats.get(zone);
  if (!format) {
    format = new Intl.DateTimeFormat('en-CA', {
      timeZone: zone,
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
      hourCycle: 'h23',
    });
    formats.set(zone, format);
  }
  return format;
}

export function localDateTime(zone: string, at: Date = new Date()): string {
  const parts = formatFor(zone).formatToParts(at);
  const get = (type: string): string => parts.find((p) => p.type === type)?.value ?? '00';
  // The formatter writes the years before 1000 with fewer digits (50, not 0050).
  return `${get('year').padStart(4, '0')}-${get('month')}-${get('day')}T${get('hour')}:${get('minute')}:${get('second')}`;
}

let today: { zone: string; second: number; date: string } | undefined;

export function localDate(zone: string, at?: Date): string {
  if (at !== undefined) return localDateTime(zone, at).slice(0, 10);
  // Today's date is asked on every request: worked out once a second, not each time.
  const second = Math.floor(Date.now() / 1000);
  if (today?.zone !== zone || today.second !== second) today = { zone, second, date: localDateTime(zone, new Date(second * 1000)).slice(0, 10) };
  return today.date;
}


/** A number of things as a message says it: `1 second`, `42 seconds`, `1 request`. */
export function countOf(count: number | string, thing: string): string {
  return Number(count) === 1 ? `1 ${thing}` : `${count} ${thing}s`;
}

/** A number of days as a message says it: `1 day`, `31 days`. */
export function dayCount(days: number): string {
  return countOf(days, 'day');
}

/** Adds whole days to a `yyyy-mm-dd` date. */
export function addDays(date: string, days: number): string {
  const d = new Date(`${date}T00:00:00Z`);
  d.setUTCDate(d.getUTCDate() + days);
  return d.toISOString().slice(0, 10);
}

/** Whole days from `from` to `to` (`yyyy-mm-dd`). */
export function daysBetween(from: string, to: string): number {
  return Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / 86_400_000);
}

/**
 * The instant at which the wall clock of `zone` shows `local` (`yyyy-mm-ddThh:mm:ss[.sss]`).
 * In an overlap (clocks put back), the earlier of the two instants; in a gap (clocks put
 * forward: 01:30 on the night London goes from 01:00 to 02:00), the moment of the change, the
 * first instant whose wall clock is past the time given, so that "since 01:30" takes in
 * everything the clock showed from then on (02:00 onwards).
 */
export function instantOfLocal(local: string, zone: string): Date {
  const asUtc = Date.parse(`${local}Z`);
  const offsetAt = (at: number): number => Date.parse(`${localDateTime(zone, new Date(at))}Z`) - Math.floor(at / 1000) * 1000;
  // Two offsets may apply near a change: try the one in force a day before and a day after
  // (one of them only at the ends of the years 0000 to 9999, where the other day has no
  // four-digit year to read the offset from).
  const candidates = [offsetAt(asUtc - 86_400_000), offsetAt(asUtc + 86_400_000)]
    .filter((offset) => !Number.isNaN(offset))
    .map((offset) => asUtc - offset);
  const wall = local.slice(0, 19);
  const exact = candidates.filter((at) => localDateTime(zone, new Date(at)) === wall).sort((a, b) => a - b);
  if (exact[0] !== undefined) return new Date(exact[0]);
  if (candidates.length < 2) return new Date(candidates[0] ?? asUtc);
  return new Date(firstShowingFrom(wall, zone, Math.min(...candidates), Math.max(...candidates)));
}

/**
 * The first whole second from `before` to `after` (instants, `before`'s wall clock earlier than
 * `wall`, `after`'s later) at which the wall clock of `zone` reads `wall` or later: where the
 * clocks jumped over it. Clocks change on whole seconds.
 */
function firstShowingFrom(wall: string, zone: string, before: number, after: number): number {
  let lo = Math.floor(before / 1000);
  let hi = Math.ceil(after / 1000);
  while (hi - lo > 1) {
    const mid = Math.floor((lo + hi) / 2);
    if (localDateTime(zone, new Date(mid * 1000)) >= wall) hi = mid;
    else lo = mid;
  }
  return hi * 1000;
}
