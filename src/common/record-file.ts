import { createReadStream } from 'node:fs';
import { readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { createInterface } from 'node:readline';
import { parse as parseCsv } from 'csv-parse';

/** One record of an import file, or why it could not be read, with its line number. */
/** A record of an import file, or why it could not be read; `text`: its values are all text (CSV). */
export type FileRecord = { line: number; value: unknown; text?: boolean; error?: undefined } | { line: number; error: string };

export type RecordFormat = 'json' | 'ndjson' | 'csv';

export class RecordFileError extends Error {}

/** An import file must exist and be a file: said in one line, as an operator's mistake. */
async function mustBeFile(path: string): Promise<void> {
  let isFile: boolean;
  try {
    isFile = (await stat(path)).isFile();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new RecordFileError(code === 'ENOENT' ? `${path} does not exist.` : `${path} cannot be read (${code ?? 'error'}).`);
  }
  if (!isFile) throw new RecordFileError(`${path} is not a file.`);
}

async function sniff(path: string): Promise<RecordFormat> {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.ndjson' || ext === '.jsonl') return 'ndjson';
  const head = await readHead(path);
  const first = head.trimStart()[0];
  if (first === '[') return 'json';
  if (first === '{') return ext === '.json' && !/\}\s*\n\s*\{/.test(head) ? 'json' : 'ndjson';
  if (ext === '.json') return 'json';
  return 'csv';
}

async function readHead(path: string): Promise<string> {
  const stream = createReadStream(path, { encoding: 'utf8', start: 0, end: 65535 });
  let text = '';
  for await (const chunk of stream) text += chunk as string;
  return text;
}

/**
 * Finds where each element of a top-level JSON array starts, so a bad record can be
 * reported by its line. Only called on text JSON.parse already accepted.
 */
function arrayElementLines(text: string): number[] {
  const lines: number[] = [];
  let depth = 0;
  let line = 1;
  let inString = false;
  let expectValue = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '\n') line++;
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === ' ' || c === '\t' || c === '\r' || c === '\n') continue;
    if (depth === 1 && expectValue && c !== ']') {
      lines.push(line);
      expectValue = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth++;
      if (depth === 1) expectValue = true;
    } else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 1) expectValue = true;
  }
  return lines;
}

/** A byte order mark, which editors on Windows write at the start of a UTF-8 file: not part of the JSON. */
const BOM = /^\uFEFF/;

async function* jsonArray(path: string): AsyncGenerator<FileRecord> {
  const text = (await readFile(path, 'utf8')).replace(BOM, '');
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (error) {
    throw new RecordFileError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  const items = Array.isArray(parsed) ? parsed : [parsed];
  const lines = Array.isArray(parsed) ? arrayElementLines(text) : [1];
  for (let i = 0; i < items.length; i++) yield { line: lines[i] ?? i + 1, value: items[i] };
}

async function* ndjson(path: string): AsyncGenerator<FileRecord> {
  const input = createInterface({ input: createReadStream(path, { encoding: 'utf8' }), crlfDelay: Infinity });
  let line = 0;
  for await (const read of input) {
    line++;
    const text = line === 1 ? read.replace(BOM, '') : read;
    if (text.trim() === '') continue;
    try {
      yield { line, value: JSON.parse(text) as unknown };
    } catch (error) {
      yield { line, error: `not valid JSON: ${(error as Error).message}` };
    }
  }
}

async function* csv(path: string, known?: readonly string[]): AsyncGenerator<FileRecord> {
  // The header row names the fields; one that names none the import knows (or no header at all) refuses the file.
  const header = (names: string[]): string[] => {
    const unknown = known ? names.filter((name) => !known.includes(name)) : [];
    if (unknown.length > 0) {
      throw new RecordFileError(
        `${path}: the CSV header names unknown columns (${unknown.map((n) => `'${n}'`).join(', ')}); its first row must name the columns, of ${known!.join(', ')}.`,
      );
    }
    return names;
  };
  const parser = createReadStream(path).pipe(
    parseCsv({ columns: header, bom: true, skip_empty_lines: true, trim: true, info: true, relax_column_count: false }),
  );
  try {
    for await (const row of parser as AsyncIterable<{ record: Record<string, string>; info: { lines: number } }>) {
      // CSV cannot tell an empty value from a missing one: an empty cell is a field not given.
      const value = Object.fromEntries(Object.entries(row.record).filter(([, cell]) => cell !== ''));
      yield { line: row.info.lines, value, text: true };
    }
  } catch (error) {
    if (error instanceof RecordFileError) throw error;
    const err = error as Error & { lines?: number };
    yield { line: err.lines ?? 0, error: `not valid CSV: ${err.message}` };
  }
}

/**
 * Reads the records of an import file: a JSON array (or one object), NDJSON, or CSV with
 * a header row. The format follows the extension, else the first character.
 */
export async function* readRecords(path: string, options: RecordFileOptions = {}): AsyncGenerator<FileRecord> {
  await mustBeFile(path);
  const kind = options.format ?? (await sniff(path));
  if (kind === 'json') yield* jsonArray(path);
  else if (kind === 'ndjson') yield* ndjson(path);
  else yield* csv(path, options.columns);
}

export interface RecordFileOptions {
  format?: RecordFormat;
  /** The fields a CSV header may name; a header naming another refuses the file. */
  columns?: readonly string[];
}

/** Reads every record into memory (for small files such as branch or menu lists). */
export async function readAllRecords(path: string, options: RecordFileOptions = {}): Promise<FileRecord[]> {
  const all: FileRecord[] = [];
  for await (const record of readRecords(path, options)) all.push(record);
  return all;
}
