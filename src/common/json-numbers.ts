import { CLOSE_BRACE, CLOSE_BRACKET, COMMA, OPEN_BRACE, OPEN_BRACKET, QUOTE, stringEnd, stringValue } from './json-duplicates.js';

/**
 * Numbers of untrusted JSON that a double cannot keep as they were written.
 *
 * JSON.parse reads every number as the nearest double: `100.99999999999999999` becomes 101,
 * `9007199254740993` becomes 9007199254740992, `1e400` Infinity and `1e-400` 0. Stored, such a
 * value would come back as another number than was sent (a dish posted to menu
 * 100.99999999999999999 would land on menu 101), so the records the service reads from
 * partners and operators are parsed with `parseRecordJson`, which leaves such a number as an
 * `UnkeptNumber` (its text, and what JSON.parse read) for the record reader to refuse.
 * A number whose double gives back the same value (`70.1`, `1.0`, `1e2`) is a number as usual.
 */
export class UnkeptNumber {
  /** What JSON.parse reads the text as. */
  readonly read: number;
  /** Whether the number written is a whole number (however large). */
  readonly integral: boolean;

  constructor(readonly text: string) {
    this.read = Number(text);
    this.integral = isIntegral(text);
  }

  /** In a message that quotes a value as JSON, the number as it was written (as a string). */
  toJSON(): string {
    return this.text;
  }
}

/** A JSON number: sign, integer part, fraction, exponent. */
const NUMBER = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** A decimal number's value in one form: sign, digits without leading or trailing zeros, and the power of ten of the last digit; '0' for zero. */
function canonical(text: string): string | null {
  const m = NUMBER.exec(text);
  if (!m) return null;
  const [, sign, whole, fraction = '', exponent = '0'] = m;
  const digits = `${whole}${fraction}`.replace(/^0+/, '');
  if (digits === '') return '0';
  const significant = withoutTrailingZeros(digits);
  // An exponent of more than 15 digits puts any nonzero number past every double (the digits
  // written cannot make up for it, however many): its size is all that is said of it, and it
  // is never read as a number (BigInt would take quadratic time over a long one).
  const magnitude = exponent.replace(/^[+-]?0*/, '');
  if (magnitude.length > 15) return `${sign}${significant}e${exponent.startsWith('-') ? '-' : ''}huge`;
  const power = BigInt(exponent) - BigInt(fraction.length) + BigInt(digits.length - significant.length);
  return `${sign}${significant}e${power}`;
}

/**
 * `digits` without its trailing zeros, in one pass from the end: `replace(/0+$/, '')` tries
 * every zero of a run that does not end the text to its end, time quadratic in the run
 * (`1` + 65,000 zeros + `5`, a number a dish's json part can hold, took 3 s of CPU).
 */
function withoutTrailingZeros(digits: string): string {
  let end = digits.length;
  while (end > 0 && digits.charCodeAt(end - 1) === 0x30) end--;
  return digits.slice(0, end);
}

function isIntegral(text: string): boolean {
  const form = canonical(text);
  return form === '0' || (form !== null && !form.includes('e-'));
}

/** At most 15 digits and no exponent: a decimal every double gives back (15 significant digits always round-trip). */
const SHORT = /^-?\d+(?:\.\d+)?$/;

/** Whether the double JSON.parse makes of a number's text has the very value written. */
export function keptExactly(text: string): boolean {
  if (text.length <= 16 && SHORT.test(text) && text.length - (text.startsWith('-') ? 1 : 0) - (text.includes('.') ? 1 : 0) <= 15) return true;
  const read = Number(text);
  // String() gives the shortest text that reads back as the same double: its value is the double's.
  return Number.isFinite(read) && canonical(String(read).replace(/e\+/, 'e')) === canonical(text);
}

type PathSegment = string | number;

/** What scanNumbers tells of the text as it reads it; `path` is the live path, changed as the reading goes on. */
interface NumberScan {
  /** A container opens where `path` stands: its last segment is the container's key or index in its parent (none for the root). */
  open?(path: readonly PathSegment[]): void;
  /** The container opened last closes. */
  close?(): void;
  /** A number a double cannot keep stands at `path`. */
  unkept(path: readonly PathSegment[], text: string): void;
}

/** Where each number of the text that a double cannot keep stands, in document order. Only for text JSON.parse has accepted. */
export function unkeptNumbers(text: string): { path: PathSegment[]; text: string }[] {
  const found: { path: PathSegment[]; text: string }[] = [];
  scanNumbers(text, { unkept: (path, lexeme) => found.push({ path: [...path], text: lexeme }) });
  return found;
}

/**
 * Reads the text once, telling `scan` of each container and each number a double cannot keep.
 * Nothing is done per number that takes the depth's time: a path is as long as the text is
 * nested, and a copy of it for each number (and a walk from the root to each) took seconds
 * for a 64 KiB dish of thousands of brackets around thousands of such numbers. Only for text
 * JSON.parse has accepted.
 */
function scanNumbers(text: string, scan: NumberScan): void {
  /** Per open container: an object's key being read or last read, or an array's next index. */
  const path: PathSegment[] = [];
  const containers: ('object' | 'array')[] = [];
  let expectingKey = false;
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === QUOTE) {
      const end = stringEnd(text, at);
      if (expectingKey) {
        path[path.length - 1] = stringValue(text, at, end);
        expectingKey = false;
      }
      at = end;
    } else if (c === OPEN_BRACE) {
      scan.open?.(path);
      containers.push('object');
      path.push('');
      expectingKey = true;
    } else if (c === OPEN_BRACKET) {
      scan.open?.(path);
      containers.push('array');
      path.push(0);
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      scan.close?.();
      containers.pop();
      path.pop();
      expectingKey = false;
    } else if (c === COMMA) {
      const top = containers.length - 1;
      if (containers[top] === 'array') path[top] = (path[top] as number) + 1;
      expectingKey = containers[top] === 'object';
    } else if (c === MINUS || (c >= DIGIT_0 && c <= DIGIT_9)) {
      let end = at + 1;
      while (end < text.length && NUMBER_CHARS.has(text.charCodeAt(end))) end++;
      const lexeme = text.slice(at, end);
      if (!keptExactly(lexeme)) scan.unkept(path, lexeme);
      at = end - 1;
    }
  }
}

/**
 * JSON.parse for a record from outside (a dish form's `json` part, a line of an import file):
 * the same value, except that a number a double cannot keep as written is an `UnkeptNumber`.
 * Throws what JSON.parse throws.
 */
export function parseRecordJson(text: string): unknown {
  const value: unknown = JSON.parse(text);
  let root: unknown = value;
  /** The value JSON.parse made of each container open in the scan, the innermost last (a key named twice leaves its last value). */
  const parents: unknown[] = [];
  scanNumbers(text, {
    open: (path) => parents.push(path.length === 0 ? value : ownValue(parents[parents.length - 1], path[path.length - 1])),
    close: () => parents.pop(),
    unkept: (path, lexeme) => {
      if (path.length === 0) {
        root = new UnkeptNumber(lexeme);
        return;
      }
      const parent = parents[parents.length - 1];
      const key = path[path.length - 1];
      // A key named twice leaves its last value in the object (such a record is refused anyway).
      if (typeof parent === 'object' && parent !== null && typeof ownValue(parent, key) === 'number') {
        Object.defineProperty(parent, key, { value: new UnkeptNumber(lexeme), enumerable: true, writable: true, configurable: true });
      }
    },
  });
  return root;
}

/** An object's own property (`__proto__` included, as JSON.parse makes it), or undefined. */
function ownValue(container: unknown, key: PathSegment): unknown {
  if (typeof container !== 'object' || container === null) return undefined;
  return Object.prototype.hasOwnProperty.call(container, key) ? (container as Record<PathSegment, unknown>)[key] : undefined;
}

const MINUS = 0x2d;
const DIGIT_0 = 0x30;
const DIGIT_9 = 0x39;
/** What follows a number's first character within it: digits, `.`, `e`, `E`, `+`, `-`. */
const NUMBER_CHARS = new Set([...'0123456789.eE+-'].map((ch) => ch.charCodeAt(0)));
