import { isAscii } from 'node:buffer';
import iconv from 'iconv-lite';
import { duplicateKey, quotedKey } from '../common/json-duplicates.js';
import { parseRecordJson } from '../common/json-numbers.js';

/** The parts of an upload as the multipart reader left them. */
export interface UploadParts {
  files: { fieldname: string; originalname: string; buffer: Buffer }[];
  /** Text parts as the multipart reader gave them (see `fieldText`). */
  fields: Record<string, unknown>;
  /** The same parts read with latin1 for a part that names no charset (see `fieldText`). */
  fieldsAsLatin1: Record<string, unknown>;
  /** The charset the `json` text part names (in lower case), as its head says; undefined when it names none. */
  jsonCharset?: string;
}

/** What the multipart reader gives for a text part that declares no charset: its bytes, in base64. */
export const UNDECLARED_CHARSET = 'base64';

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

const C1_CONTROL = /[\u0080-\u009f]/;

/** The names the multipart reader takes for US-ASCII, which it decodes as ISO-8859-1. */
const ASCII_NAMES = new Set(['ascii', 'us-ascii']);

/** The names the multipart reader takes for windows-1252, which it decodes as ISO-8859-1. */
const WINDOWS_1252_NAMES = new Set(['windows-1252', 'cp1252', 'x-cp1252']);

/** What an upload form holds: the image's bytes and the dish as parsed JSON, or what is wrong with the form. */
export interface UploadForm {
  image?: Buffer;
  /** The dish: the parsed `json` part (its fields are read by the service). */
  json?: unknown;
  errors: string[];
}

/**
 * Reads the form of a dish upload (the interface's multipart request): one image part, with
 * an empty name or named `file`, and one `json` part (as a file or a field) holding the dish.
 * Every problem of the form is listed; the image and the dish are checked by the service.
 */
export function readUploadForm(parts: UploadParts): UploadForm {
  const errors: string[] = [];
  const imageParts = parts.files.filter((f) => f.fieldname === '' || f.fieldname === 'file');
  const unexpected = parts.files.filter((f) => f.fieldname !== '' && f.fieldname !== 'file' && f.fieldname !== 'json');
  for (const part of unexpected) errors.push(`Unexpected file part '${part.fieldname}': the image part has an empty name or 'file'.`);
  if (imageParts.length === 0) errors.push("The image part is required: a file part with an empty name or named 'file'.");
  if (imageParts.length > 1) errors.push('Send one image part only.');
  const json = jsonPart(parts, errors);
  return { image: imageParts.length === 1 ? imageParts[0].buffer : undefined, json, errors };
}

function jsonPart(parts: UploadParts, errors: string[]): unknown {
  const asFile = parts.files.filter((f) => f.fieldname === 'json');
  const asField = parts.fields.json;
  if (asFile.length + (asField === undefined ? 0 : 1) > 1 || Array.isArray(asField)) {
    errors.push("Send one 'json' part only.");
    return undefined;
  }
  const declared = typeof asField === 'string' && asField === parts.fieldsAsLatin1.json;
  const text = asFile[0] ? strictUtf8(asFile[0].buffer) : typeof asField === 'string' ? fieldText(asField, declared, parts.jsonCharset) : asField;
  if (text === undefined) {
    errors.push("The 'json' part is required: the dish as JSON.");
    return undefined;
  }
  // JSON is UTF-8 (RFC 8259 §8.1): bytes that are not would be stored as U+FFFD, not as sent.
  if (text === null) {
    errors.push(
      declared
        ? "The 'json' part is not valid UTF-8, or holds U+FFFD in a part that names its charset: send U+FFFD in a part without a charset parameter."
        : "The 'json' part is not valid UTF-8.",
    );
    return undefined;
  }
  if (text instanceof Unreadable) {
    errors.push(text.message);
    return undefined;
  }
  if (typeof text !== 'string') {
    errors.push("The 'json' part must be JSON text.");
    return undefined;
  }
  // An ISO-8859-1 part's 0x80–0x9F are C1 control characters, which senders mean as
  // windows-1252's €, – or “ more often than as controls, and no text sent in a charset means.
  if (declared && C1_CONTROL.test(text)) {
    errors.push("The 'json' part holds a C1 control character (U+0080 to U+009F) in a part that names its charset: send it as UTF-8, without a charset parameter.");
    return undefined;
  }
  let value: unknown;
  try {
    value = parseRecordJson(text);
  } catch {
    errors.push("The 'json' part is not valid JSON.");
    return undefined;
  }
  // Which of two values is meant is the partner's to say: JSON.parse would keep the last silently.
  const twice = duplicateKey(text);
  if (twice !== null) {
    errors.push(`The 'json' part names '${quotedKey(twice)}' more than once.`);
    return undefined;
  }
  return value;
}

/** The bytes as UTF-8 text, or null where they are not UTF-8. */
function strictUtf8(bytes: Buffer): string | null {
  try {
    return STRICT_UTF8.decode(bytes);
  } catch {
    return null;
  }
}

/** What fieldText gives for a part whose bytes its declared charset does not read, and why. */
class Unreadable {
  constructor(readonly message: string) {}
}

const OUTSIDE_ASCII = new Unreadable("The 'json' part names the charset US-ASCII but holds bytes outside it: send it as UTF-8, without a charset parameter.");

const UNDEFINED_IN_1252 = new Unreadable(
  "The 'json' part names the charset windows-1252 but holds a byte it leaves undefined (0x81, 0x8D, 0x8F, 0x90 or 0x9D): send it as UTF-8, without a charset parameter.",
);

/**
 * A text part's text, or null when its bytes were not UTF-8. A part that names no charset (as
 * browsers, curl and HTTP libraries send one) reaches the reader as its bytes in base64
 * (UNDECLARED_CHARSET), read here strictly as UTF-8, so that no byte of it is lost or made up.
 * One that names a charset arrives decoded by it (`declared`: the reader's second reading,
 * with latin1 for undeclared parts, gave the same text). A U+FFFD in it may stand for bytes
 * its charset could not read: such a part is refused. The reader decodes US-ASCII and
 * windows-1252 as ISO-8859-1, one character a byte, so `charset` (what the part's head names)
 * tells them apart: a byte over 0x7F in a US-ASCII part is none of it, and a windows-1252
 * part's bytes are read again as windows-1252 (0x80 is €, not a C1 control; a byte it leaves
 * undefined is refused).
 */
function fieldText(value: string, declared: boolean, charset: string | undefined): string | null | Unreadable {
  if (!declared) return strictUtf8(Buffer.from(value, 'base64'));
  if (value.includes('\uFFFD')) return null;
  let text = value;
  // Both come decoded as ISO-8859-1, a character a byte: their bytes are `value` in latin1.
  if (charset !== undefined && ASCII_NAMES.has(charset) && !isAscii(Buffer.from(value, 'latin1'))) return OUTSIDE_ASCII;
  if (charset !== undefined && WINDOWS_1252_NAMES.has(charset)) {
    // Node 20's TextDecoder reads windows-1252 as ISO-8859-1 too; the five bytes it leaves undefined come out as U+FFFD.
    text = iconv.decode(Buffer.from(value, 'latin1'), 'windows-1252');
    if (text.includes('\uFFFD')) return UNDEFINED_IN_1252;
  }
  // A byte-order mark is no part of the text, as strict decoding drops it too.
  return text.startsWith('\uFEFF') ? text.slice(1) : text;
}
