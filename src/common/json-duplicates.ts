import { cutText } from './visible-text.js';

/** A key as a message quotes it: at most 100 characters (a key may be megabytes long; see cutText). */
export function quotedKey(key: string): string {
  return cutText(key, 100);
}

/**
 * The first key that an object of the JSON text names more than once, or null when none does.
 * JSON.parse keeps the last of such keys silently (RFC 8259 §4 leaves the meaning to the
 * parser), so `{"menuId": 1, "menuId": 2}` would be read one way here and another way by a
 * proxy or a log reader before it; a key given twice is refused as a query parameter given
 * twice is. Keys are compared as JSON reads them (`"a"` and `"\u0061"` are the same key). Only
 * for text JSON.parse has accepted.
 */
export function duplicateKey(text: string): string | null {
  /** Per open object its keys so far; null for an open array. */
  const open: (Set<string> | null)[] = [];
  let expectingKey = false;
  for (let at = 0; at < text.length; at++) {
    const c = text.charCodeAt(at);
    if (c === QUOTE) {
      const end = stringEnd(text, at);
      const keys = open[open.length - 1];
      if (expectingKey && keys) {
        const key = stringValue(text, at, end);
        if (keys.has(key)) return key;
        keys.add(key);
        expectingKey = false;
      }
      at = end;
    } else if (c === OPEN_BRACE) {
      open.push(new Set());
      expectingKey = true;
    } else if (c === OPEN_BRACKET) {
      open.push(null);
    } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
      open.pop();
      expectingKey = false;
    } else if (c === COMMA) {
      expectingKey = open[open.length - 1] instanceof Set;
    }
  }
  return null;
}

/** The index of the quote that closes the JSON string opening at `start`. Only for text JSON.parse has accepted. */
export function stringEnd(text: string, start: number): number {
  let end = start + 1;
  for (;;) {
    end = text.indexOf('"', end);
    // A quote after an odd run of backslashes is escaped.
    let slashes = 0;
    while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
    if (slashes % 2 === 0) return end;
    end++;
  }
}

/** The value of the JSON string from the quote at `start` to the one at `end`. */
export function stringValue(text: string, start: number, end: number): string {
  const raw = text.slice(start + 1, end);
  return raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
}

export const QUOTE = 0x22;
export const BACKSLASH = 0x5c;
export const OPEN_BRACE = 0x7b;
export const CLOSE_BRACE = 0x7d;
export const OPEN_BRACKET = 0x5b;
export const CLOSE_BRACKET = 0x5d;
export const COMMA = 0x2c;
