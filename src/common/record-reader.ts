import { keptExactly, UnkeptNumber } from './json-numbers.js';
import { ID_MAX } from './query-fields.js';
import { cutText } from './visible-text.js';

/** A number as text (CSV): decimal digits with an optional fraction and exponent, nothing else. */
const DECIMAL = /^-?\d+(\.\d+)?([eE][+-]?\d+)?$/;

/** Characters no text column stores as given: NUL (PostgreSQL refuses it), and halves of a surrogate pair (encoded as U+FFFD). */
// eslint-disable-next-line no-control-regex -- NUL is exactly what this looks for
const UNSTORABLE = /[\u0000\p{Cs}]/u;

/** Whether text holds nothing a text column would not keep as given (see UNSTORABLE). */
export function isStorableText(s: string): boolean {
  return !UNSTORABLE.test(s);
}

/** Length in characters (code points), as the databases count a varchar's length, not UTF-16 units. */
export function characters(s: string): number {
  let n = 0;
  for (const _ of s) n++;
  return n;
}

/**
 * Reads fields of one untrusted record (an import line, a JSON form part), collecting
 * one message per violated rule instead of stopping at the first.
 *
 * A value is kept exactly as given: an empty string is an empty string, not an absent value
 * (only `undefined` and `null` are absent), so an optional text field imported as `""` is
 * served as `""`. A required field must not be absent nor `""`. A field that is not text
 * (a number, a boolean, a date) given as `""` is refused, not read as absent. CSV, which
 * cannot tell an empty value from a missing one, leaves empty cells out (see record-file.ts).
 */
export class RecordReader {
  readonly errors: string[] = [];
  private readonly data: Record<string, unknown>;
  /** The value is no object: that is its one error, not a missing field after another. */
  private readonly notObject: boolean;

  private readonly prefix: string;
  private readonly textValues: boolean;

  /**
   * `prefix`: of the field names in messages (a nested reader's). `what`: how the value is
   * named when it is no object (by default its prefix). `textValues`: the record's values are
   * all text (a CSV row), so a number or a boolean is read from its text; in JSON a number
   * must be a JSON number and a boolean a JSON boolean, so that `"3"` is refused rather than
   * stored as something else than was sent.
   */
  constructor(value: unknown, options: { prefix?: string; what?: string; textValues?: boolean } = {}) {
    this.prefix = options.prefix ?? '';
    this.textValues = options.textValues ?? false;
    this.notObject = typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof UnkeptNumber;
    this.data = this.notObject ? {} : (value as Record<string, unknown>);
    if (this.notObject) this.errors.push(`${options.what ?? (this.prefix ? `'${this.prefix.replace(/\.$/, '')}'` : 'the record')} must be a JSON object.`);
  }

  get ok(): boolean {
    return this.errors.length === 0;
  }

  /** Whether the field has a value: anything but absent or null (`""` is a value). */
  has(field: string): boolean {
    const v = this.value(field);
    return v !== undefined && v !== null;
  }

  raw(field: string): unknown {
    return this.value(field);
  }

  /**
   * The field's value. Names are case-sensitive, and a name that differs from the field's in
   * case only (`Keywords`, `EndDate`) is refused rather than ignored: read as absent, it would
   * store a dish without its keywords or a menu without its end, and say nothing.
   */
  private value(field: string): unknown {
    const others = this.otherCases(field);
    if (others !== null && !this.caseChecked?.has(field)) {
      (this.caseChecked ??= new Set()).add(field);
      const given = others.map((name) => `'${this.prefix}${name}'`).join(', ');
      this.errors.push(
        field in this.data
          ? `${given} and ${this.name(field)} are both given: field names are case-sensitive; give ${this.name(field)} only.`
          : `${given} is not a field: field names are case-sensitive; write ${this.name(field)}.`,
      );
    }
    return this.data[field];
  }

  /**
   * The record's names that are `field` in another case; null for none (as nearly always).
   * Only names of the field's length are lowered: no allocation for a record without any.
   */
  private otherCases(field: string): string[] | null {
    let others: string[] | null = null;
    let lower: string | undefined;
    for (const name in this.data) {
      if (name.length !== field.length || name === field) continue;
      lower ??= field.toLowerCase();
      if (name.toLowerCase() === lower) (others ??= []).push(name);
    }
    return others;
  }

  private caseChecked: Set<string> | undefined;

  /** Adds a message on `field`, named as the reader names it (with its prefix): `'dishes[0].keywords[1]' …`. */
  fail(field: string, rule: string): void {
    this.errors.push(`${this.name(field)} ${rule}`);
  }

  private name(field: string): string {
    return `'${this.prefix}${field}'`;
  }

  /** True when the field has no value to read: absent or null, or `""` where a value is required. */
  private missing(field: string, required: boolean, v: unknown): boolean {
    if (v !== undefined && v !== null && !(required && v === '')) return false;
    if (required && !this.notObject) this.errors.push(`${this.name(field)} must not be empty.`);
    return true;
  }

  /** An integer; integer strings (CSV) are accepted. */
  int(field: string, opts: { min?: number; max?: number; required?: boolean } = {}): number | null {
    const required = opts.required ?? true;
    const v = this.value(field);
    if (this.missing(field, required, v)) return null;
    const { text, unkept } = this.numberText(v);
    if (unkept) {
      // A number a double cannot hold as written: not a whole number, or one beyond every bound.
      if (!unkept.integral) this.errors.push(`${this.name(field)} must be an integer: '${shown(unkept)}'.`);
      else if (opts.max !== undefined && unkept.read > opts.max) this.errors.push(`${this.name(field)} must be less than or equal to '${opts.max}'.`);
      else if (opts.min !== undefined && unkept.read < opts.min) this.errors.push(this.belowMin(field, opts.min));
      else this.errors.push(`${this.name(field)} ${keptRange(opts)}: '${shown(unkept)}'.`);
      return null;
    }
    // Text (CSV) as JSON would have it: digits, or a decimal of a whole value (`71.0`, `1e3`).
    const n = text !== undefined ? Number(text) : v;
    if (typeof n !== 'number' || !Number.isInteger(n)) {
      this.errors.push(`${this.name(field)} must be an integer: '${shown(v)}'.`);
      return null;
    }
    // An integer past a bound breaks the bound, as the API says it, however many digits it has.
    if (opts.min !== undefined && n < opts.min) {
      this.errors.push(this.belowMin(field, opts.min));
      return null;
    }
    if (opts.max !== undefined && n > opts.max) {
      this.errors.push(`${this.name(field)} must be less than or equal to '${opts.max}'.`);
      return null;
    }
    if (!Number.isSafeInteger(n)) {
      this.errors.push(`${this.name(field)} ${keptRange(opts)}: '${shown(v)}'.`);
      return null;
    }
    return n;
  }

  private belowMin(field: string, min: number): string {
    // Ids say it as the API's parameters do: 'menuId' must be greater than '0'.
    return `${this.name(field)} must be ${min === 1 ? "greater than '0'" : `greater than or equal to '${min}'`}.`;
  }

  /** An id of the service's integer ids (clients, brands, menus): 1 to ID_MAX, as the API's parameters take them. */
  id(field: string, opts: { required?: boolean } = {}): number | null {
    return this.int(field, { min: 1, max: ID_MAX, required: opts.required });
  }

  /** A finite number; decimal strings (CSV) are accepted. */
  number(field: string, opts: { required?: boolean; min?: number; max?: number } = {}): number | null {
    const required = opts.required ?? true;
    const v = this.value(field);
    if (this.missing(field, required, v)) return null;
    const { text, unkept } = this.numberText(v);
    if (unkept) {
      // Rounded to the nearest double it would be stored, and served, as another number.
      const outside = (opts.min !== undefined && unkept.read < opts.min) || (opts.max !== undefined && unkept.read > opts.max);
      this.errors.push(outside ? this.outside(field, opts) : `${this.name(field)} has more digits than the service keeps: '${shown(unkept)}' would be stored as '${unkept.read}'.`);
      return null;
    }
    const n = text !== undefined ? Number(text) : v;
    if (typeof n !== 'number' || !Number.isFinite(n)) {
      this.errors.push(`${this.name(field)} must be a number: '${shown(v)}'.`);
      return null;
    }
    if ((opts.min !== undefined && n < opts.min) || (opts.max !== undefined && n > opts.max)) {
      this.errors.push(this.outside(field, opts));
      return null;
    }
    return n;
  }

  /**
   * A value read as a number: `text`, a CSV cell's decimal (trimmed), and `unkept`, a number a
   * double cannot hold as written (from JSON, see parseRecordJson, or such a cell).
   */
  private numberText(v: unknown): { text?: string; unkept?: UnkeptNumber } {
    if (v instanceof UnkeptNumber) return { unkept: v };
    const text = this.textValues && typeof v === 'string' ? v.trim() : undefined;
    if (text === undefined || !DECIMAL.test(text)) return {};
    return keptExactly(text) ? { text } : { unkept: new UnkeptNumber(text) };
  }

  private outside(field: string, opts: { min?: number; max?: number }): string {
    return `${this.name(field)} must be between '${opts.min}' and '${opts.max}'.`;
  }

  /** Text, kept as given (`""` included, when the field is optional); `max` counts characters. */
  string(field: string, opts: { max?: number; required?: boolean; pattern?: RegExp; patternText?: string } = {}): string | null {
    const required = opts.required ?? true;
    const v = this.value(field);
    if (v !== undefined && v !== null && typeof v !== 'string') {
      this.errors.push(`${this.name(field)} must be a string.`);
      return null;
    }
    if (this.missing(field, required, v)) return null;
    const s = v as string;
    if (opts.max !== undefined && s.length > opts.max && characters(s) > opts.max) {
      this.errors.push(`${this.name(field)} must be at most ${opts.max} characters.`);
      return null;
    }
    if (!isStorableText(s)) {
      this.errors.push(`${this.name(field)} must not contain NUL characters or unpaired UTF-16 surrogates.`);
      return null;
    }
    if (opts.pattern && !opts.pattern.test(s)) {
      this.errors.push(`${this.name(field)} ${opts.patternText ?? 'is not in the expected format'}: '${s}'.`);
      return null;
    }
    return s;
  }

  boolean(field: string, opts: { required?: boolean } = {}): boolean | null {
    const v = this.value(field);
    if (this.missing(field, opts.required ?? false, v)) return null;
    if (typeof v === 'boolean') return v;
    if (this.textValues && (v === 'true' || v === 'false')) return v === 'true';
    this.errors.push(`${this.name(field)} must be true, false or null.`);
    return null;
  }

  /** A calendar date `yyyy-mm-dd` that exists, in the years 0001 to 9999. */
  date(field: string, opts: { required?: boolean } = {}): string | null {
    const s = this.string(field, { required: opts.required ?? true });
    if (s === null) return null;
    if (!isCalendarDate(s)) {
      this.errors.push(`${this.name(field)} ${calendarDateFault(s)}`);
      return null;
    }
    return s;
  }

  /** A wall-clock date-time `yyyy-mm-ddThh:mm:ss` with no zone. */
  localDateTime(field: string, opts: { required?: boolean } = {}): string | null {
    const s = this.string(field, { required: opts.required ?? true });
    if (s === null) return null;
    if (!isLocalDateTime(s)) {
      this.errors.push(`${this.name(field)} is not in the expected format yyyy-mm-ddThh:mm:ss: '${s}'.`);
      return null;
    }
    return s;
  }

  /** An ISO-8601 instant with a zone (`2024-05-01T10:00:00Z`). */
  instant(field: string, opts: { required?: boolean } = {}): Date | null {
    const s = this.string(field, { required: opts.required ?? false });
    if (s === null) return null;
    const d = new Date(s);
    if (!isInstant(s) || Number.isNaN(d.getTime())) {
      this.errors.push(`${this.name(field)} must be an ISO 8601 date-time with a zone (2026-11-01T12:25:00Z), a day and time that exist: '${s}'.`);
      return null;
    }
    // The instant itself within the years every database keeps (the day as written is, but its
    // zone may take it past them: 9999-12-31T23:59:59-14:00 is in the year 10000, which SQLite
    // kept as the year 0000 while PostgreSQL kept 10000).
    const year = d.getUTCFullYear();
    if (year < 1 || year > 9999) {
      this.errors.push(`${this.name(field)} must be an instant in the years 0001 to 9999 in UTC: '${s}'.`);
      return null;
    }
    return d;
  }

  array(field: string, opts: { required?: boolean } = {}): unknown[] | null {
    const v = this.value(field);
    if (v === undefined || v === null) {
      // A record that is no object was said to be none; its fields are not missing one by one.
      if ((opts.required ?? true) && !this.notObject) this.errors.push(`${this.name(field)} must not be empty.`);
      return null;
    }
    if (!Array.isArray(v)) {
      this.errors.push(`${this.name(field)} must be an array.`);
      return null;
    }
    return v as unknown[];
  }

  /** Reads a nested object with its own reader; its messages join this one's. */
  nested(value: unknown, prefix: string): RecordReader {
    return new RecordReader(value, { prefix: `${this.prefix}${prefix}`, textValues: this.textValues });
  }

  adopt(other: RecordReader): void {
    this.errors.push(...other.errors);
  }
}

/** The integers a field takes, as a message says them: its bounds within those a double holds exactly (a visitId: 1 to 2^53 - 1). */
function keptRange(opts: { min?: number; max?: number }): string {
  const low = Math.max(opts.min ?? -Number.MAX_SAFE_INTEGER, -Number.MAX_SAFE_INTEGER);
  const high = Math.min(opts.max ?? Number.MAX_SAFE_INTEGER, Number.MAX_SAFE_INTEGER);
  return `must be an integer from ${low} to ${high}`;
}

/** The most characters of a value a message quotes (see shown). */
const SHOWN_MAX = 100;

/**
 * A value as a message quotes it: text as it is, anything else as JSON (an object is not
 * `[object Object]`), cut to its first SHOWN_MAX characters (see cutText): an array of a JSON
 * part's 64 KiB, or a CSV cell of megabytes, given for an integer is said in a line, not
 * echoed whole.
 */
function shown(value: unknown): string {
  if (typeof value === 'number') return String(value);
  const text = typeof value === 'string' ? value : value instanceof UnkeptNumber ? value.text : jsonOf(value);
  return cutText(text, SHOWN_MAX);
}

/**
 * A value's JSON, or for one nested deeper than JSON.stringify can follow (it recurses, and a
 * few thousand brackets, which JSON.parse reads, run it out of stack: a RangeError that made a
 * dish upload a 500 and an import stop with 'unexpected error') the start of it: the opening
 * of each first member down to SHOWN_MAX characters, all a message quotes of it anyway.
 */
function jsonOf(value: unknown): string {
  try {
    return JSON.stringify(value) ?? String(value);
  } catch (error) {
    if (!(error instanceof RangeError)) throw error;
    let start = '';
    for (let v = value; start.length <= SHOWN_MAX && typeof v === 'object' && v !== null; ) {
      if (Array.isArray(v)) {
        start += '[';
        v = v[0];
      } else {
        const key = Object.keys(v)[0];
        if (key === undefined) break;
        start += `{${JSON.stringify(key)}:`;
        v = (v as Record<string, unknown>)[key];
      }
    }
    return `${start}…`;
  }
}

/** A calendar date `yyyy-mm-dd` that exists, in the years 0001 to 9999 (neither database keeps a year 0). */
export function isCalendarDate(s: string): boolean {
  return existsInSomeYear(s) && !s.startsWith('0000');
}

/**
 * What a message says of a date isCalendarDate refuses, after the field's name, quoting
 * `value` (the date, or what it was read from): a day of the year 0000, whose form is right
 * (RFC 3339's full-date has it), names the years taken; anything else is not in the format.
 */
export function calendarDateFault(s: string, value = s): string {
  return s.startsWith('0000') && existsInSomeYear(s)
    ? `must be a date in the years 0001 to 9999: '${value}'.`
    : `is not in the expected format yyyy-mm-dd: '${value}'.`;
}

/** Whether `s` is yyyy-mm-dd naming a day that exists in its year; the year 0000 is read as a leap year (proleptic Gregorian). */
function existsInSomeYear(s: string): boolean {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(s);
  if (!m) return false;
  const [y, mo, d] = [Number(m[1]) || 2000, Number(m[2]), Number(m[3])];
  // setUTCFullYear, not Date.UTC, which reads the years 0 to 99 as 1900 to 1999.
  const date = new Date(0);
  date.setUTCFullYear(y, mo - 1, d);
  return date.getUTCFullYear() === y && date.getUTCMonth() === mo - 1 && date.getUTCDate() === d;
}

/**
 * An ISO 8601 date-time with a zone whose every part exists: `new Date` alone rolls 02-30 over
 * to March and reads 24:00 as the next day's midnight, a different instant from the one written.
 */
function isInstant(s: string): boolean {
  const m = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2})(?:(:\d{2})(?:\.\d+)?)?(?:Z|[+-](\d{2}):?(\d{2}))$/.exec(s);
  return m !== null && isLocalDateTime(`${m[1]}${m[2] ?? ':00'}`) && Number(m[3] ?? 0) < 24 && Number(m[4] ?? 0) < 60;
}

export function isLocalDateTime(s: string): boolean {
  const m = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2}):(\d{2})$/.exec(s);
  return m !== null && isCalendarDate(m[1]) && Number(m[2]) < 24 && Number(m[3]) < 60 && Number(m[4]) < 60;
}
