/** U+FFFD in UTF-8. */
export const REPLACEMENT_CHARACTER = Buffer.from([0xef, 0xbf, 0xbd]);

/** The parts of an upload as the multipart reader left them. */
export interface UploadParts {
  files: { fieldname: string; originalname: string; buffer: Buffer }[];
  /** Text parts, decoded by the multipart reader (bytes that are no UTF-8 become U+FFFD). */
  fields: Record<string, unknown>;
  /** How many times the body holds U+FFFD in UTF-8: a text part with more of them had bytes that are no UTF-8. */
  replacementCharacters: number;
}

const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true });

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
  let text: unknown = asField;
  if (asFile[0]) {
    try {
      text = STRICT_UTF8.decode(asFile[0].buffer);
    } catch {
      text = null;
    }
  }
  if (text === undefined) {
    errors.push("The 'json' part is required: the dish as JSON.");
    return undefined;
  }
  // JSON is UTF-8 (RFC 8259 §8.1): bytes that are not would be stored as U+FFFD, not as sent.
  if (text === null || (typeof text === 'string' && replacements(text) > parts.replacementCharacters)) {
    errors.push("The 'json' part is not valid UTF-8.");
    return undefined;
  }
  if (typeof text !== 'string') {
    errors.push("The 'json' part must be JSON text.");
    return undefined;
  }
  try {
    return JSON.parse(text) as unknown;
  } catch {
    errors.push("The 'json' part is not valid JSON.");
    return undefined;
  }
}

function replacements(text: string): number {
  let n = 0;
  for (let at = text.indexOf('\uFFFD'); at >= 0; at = text.indexOf('\uFFFD', at + 1)) n++;
  return n;
}
