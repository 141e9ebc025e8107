/** A key as a message quotes it: at most 100 characters (a key may be megabytes long). */
export function quotedKey(key: string): string {
  return key.length > 100 ? `${key.slice(0, 100)}…` : key;
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
      let end = at + 1;
      for (;;) {
        end = text.indexOf('"', end);
        // A quote after an odd run of backslashes is escaped.
        let slashes = 0;
        while (text.charCodeAt(end - 1 - slashes) === BACKSLASH) slashes++;
        if (slashes % 2 === 0) break;
        end++;
      }
      const keys = open[open.length - 1];
      if (expectingKey && keys) {
        const raw = text.slice(at + 1, end);
        const key = raw.includes('\\') ? (JSON.parse(`"${raw}"`) as string) : raw;
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

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const CLOSE_BRACE = 0x7d;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
