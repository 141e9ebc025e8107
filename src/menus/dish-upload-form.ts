/** The parts of an upload as the multipart reader left them. */
export interface UploadParts {
  files: { fieldname: string; originalname: string; buffer: Buffer }[];
  fields: Record<string, unknown>;
}

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
  const text = asFile[0] ? asFile[0].buffer.toString('utf8') : asField;
  if (text === undefined) {
    errors.push("The 'json' part is required: the dish as JSON.");
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
