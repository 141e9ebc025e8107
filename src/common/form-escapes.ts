import { isUtf8 } from 'node:buffer';
import type { IncomingMessage } from 'node:http';
import { visibleName } from './visible-text.js';

/** The type of the error a form with escapes that mean no text is refused with (see problem.filter). */
export const FORM_ESCAPES_TYPE = 'form.escapes.malformed';

/** A `%` that starts no escape: not followed by two hex digits. */
const LONE_PERCENT = /%(?![0-9A-Fa-f]{2})/;

/** A field's name as a message quotes it: decoded when it can be, at most 40 characters, no control characters. */
function quotedName(field: string): string {
  const raw = field.split('=', 1)[0].replaceAll('+', ' ');
  let name: string;
  try {
    name = decodeURIComponent(raw);
  } catch {
    name = raw;
  }
  return visibleName(name);
}

/** What is wrong with one field of a form (`name=value`, as sent), if anything. */
function fieldProblem(field: string, utf8: boolean): string | undefined {
  if (LONE_PERCENT.test(field)) return `The form field '${quotedName(field)}' holds a '%' that starts no percent-escape: send '%' as %25.`;
  if (!utf8 || !field.includes('%')) return undefined;
  try {
    decodeURIComponent(field.replaceAll('+', ' '));
    return undefined;
  } catch {
    return `The form field '${quotedName(field)}' holds percent-escapes whose bytes are not UTF-8.`;
  }
}

/**
 * Refuses a form (application/x-www-form-urlencoded, as body-parser hands it to its `verify`
 * option: the bytes as sent, and the charset) whose values would not be the ones sent: a `%`
 * that starts no escape, escapes whose bytes are no UTF-8 in a UTF-8 form, or bytes that are
 * no UTF-8 (decoding would leave U+FFFD, or `%ZZ` as it stands, in their place). The query
 * string is held to the same rule (query-params). Throws a 400 naming the field.
 */
export function verifyFormEscapes(_req: IncomingMessage, _res: unknown, body: Buffer, charset: string): void {
  const utf8 = charset.toLowerCase() === 'utf-8';
  if (utf8 && !isUtf8(body)) throw malformed('The form is not UTF-8 text: send its bytes as UTF-8, or name its charset (iso-8859-1).');
  // Escapes are ASCII: read as Latin-1, every byte stays one character and the escapes are found.
  const text = body.toString('latin1');
  if (!text.includes('%')) return;
  for (const field of text.split('&')) {
    const problem = fieldProblem(field, utf8);
    if (problem !== undefined) throw malformed(problem);
  }
}

function malformed(message: string): Error {
  return Object.assign(new Error(message), { status: 400, expose: true, type: FORM_ESCAPES_TYPE });
}
