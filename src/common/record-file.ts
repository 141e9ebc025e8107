import { isUtf8 } from 'node:buffer';
import { constants, createReadStream } from 'node:fs';
import { access, readFile, stat } from 'node:fs/promises';
import { extname } from 'node:path';
import { parse as parseCsv } from 'csv-parse';
import { duplicateKey, quotedKey } from './json-duplicates.js';
import { parseRecordJson } from './json-numbers.js';

/**
 * A record of an import file, or why it could not be read, with its line number; `text`: its
 * values are all text (CSV); `element`: its place in a JSON array file (from 1), which tells
 * apart records on one line.
 */
export type FileRecord = { line: number; element?: number; value: unknown; text?: boolean; error?: undefined } | { line: number; element?: number; error: string };

export type RecordFormat = 'json' | 'ndjson' | 'csv';

export class RecordFileError extends Error {}

/** An import file must exist, be a file and be readable: said in one line, as an operator's mistake. */
async function mustBeFile(path: string): Promise<void> {
  let isFile: boolean;
  try {
    isFile = (await stat(path)).isFile();
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code;
    throw new RecordFileError(code === 'ENOENT' ? `${path} does not exist.` : `${path} cannot be read (${code ?? 'error'}).`);
  }
  if (!isFile) throw new RecordFileError(`${path} is not a file.`);
  // A file the process may not read is the operator's mistake too (exit 1), not the
  // environment's failing it half-way (exit 2).
  try {
    await access(path, constants.R_OK);
  } catch (error) {
    throw new RecordFileError(`${path} cannot be read (${(error as NodeJS.ErrnoException).code ?? 'error'}).`);
  }
}

async function sniff(path: string): Promise<RecordFormat> {
  const ext = extname(path).toLowerCase();
  if (ext === '.csv') return 'csv';
  if (ext === '.ndjson' || ext === '.jsonl') return 'ndjson';
  const head = await readHead(path);
  const first = head.trimStart()[0];
  if (first === '[') return 'json';
  if (first === '{') return ext === '.json' && !(await objectOnNextLine(path)) ? 'json' : 'ndjson';
  if (ext === '.json') return 'json';
  return 'csv';
}

/**
 * Whether the first object of a file that starts with one is followed by another on a later
 * line (NDJSON), read to the end of that object however long it is: a visit of more than the
 * 64 KiB looked at first made an NDJSON file named `.json` be read as one object, and refused whole.
 */
async function objectOnNextLine(path: string): Promise<boolean> {
  let depth = 0;
  let inString = false;
  let escaped = false;
  let ended = false;
  let newline = false;
  for await (const chunk of createReadStream(path, { encoding: 'utf8' }) as AsyncIterable<string>) {
    for (let i = 0; i < chunk.length; i++) {
      const c = chunk[i];
      if (ended) {
        if (c === '\n') newline = true;
        else if (c !== ' ' && c !== '\t' && c !== '\r') return newline && c === '{';
      } else if (inString) {
        if (escaped) escaped = false;
        else if (c === '\\') escaped = true;
        else if (c === '"') inString = false;
      } else if (c === '"') inString = true;
      else if (c === '{' || c === '[') depth++;
      else if ((c === '}' || c === ']') && --depth === 0) ended = true;
    }
  }
  return false;
}

async function readHead(path: string): Promise<string> {
  const stream = createReadStream(path, { encoding: 'utf8', start: 0, end: 65535 });
  let text = '';
  for await (const chunk of stream) text += chunk as string;
  return text;
}

/**
 * Finds where each element of a top-level JSON array starts (its line, and its offset in the
 * text), so a bad record can be reported by its line. Only called on text JSON.parse already accepted.
 */
function arrayElementStarts(text: string): { lines: number[]; offsets: number[] } {
  const lines: number[] = [];
  const offsets: number[] = [];
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
      offsets.push(i);
      expectValue = false;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') {
      depth++;
      if (depth === 1) expectValue = true;
    } else if (c === ']' || c === '}') depth--;
    else if (c === ',' && depth === 1) expectValue = true;
  }
  return { lines, offsets };
}

/** Why a record whose JSON names a key twice is refused (JSON.parse would keep the last silently). */
const twiceNamed = (key: string): string => `the record names '${quotedKey(key)}' more than once`;

/** A byte order mark, which editors on Windows write at the start of a UTF-8 file: not part of the JSON. */
const BOM = /^\uFEFF/;

/** Bytes that are no UTF-8 would be decoded to U+FFFD, a value other than the file's: they are refused instead. */
const NOT_UTF8 = 'is not UTF-8 text (bytes that are no UTF-8 would be stored as U+FFFD, not as given)';

/** Refuses a file that is not UTF-8 throughout, read in chunks (a sequence may span two). */
async function mustBeUtf8(path: string): Promise<void> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  try {
    for await (const chunk of createReadStream(path)) decoder.decode(chunk as Buffer, { stream: true });
    decoder.decode();
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ERR_ENCODING_INVALID_ENCODED_DATA') throw new RecordFileError(`${path} ${NOT_UTF8}.`);
    throw error;
  }
}

/** The file's lines as bytes, split at LF (a CR before it is dropped); a byte sequence of UTF-8 never holds an LF. */
async function* byteLines(path: string): AsyncGenerator<Buffer | number> {
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  // Bytes of a line past the limit: not kept, only counted, until its end.
  let overlong = 0;
  for await (const chunk of createReadStream(path) as AsyncIterable<Buffer>) {
    let start = 0;
    for (let at = chunk.indexOf(10); at !== -1; at = chunk.indexOf(10, start)) {
      if (overlong > 0 || pendingBytes + at - start > MAX_LINE_BYTES) {
        yield overlong + pendingBytes + at - start;
      } else {
        const line = pending.length === 0 ? chunk.subarray(start, at) : Buffer.concat([...pending, chunk.subarray(start, at)]);
        yield line.length > 0 && line[line.length - 1] === 13 ? line.subarray(0, -1) : line;
      }
      pending = [];
      pendingBytes = 0;
      overlong = 0;
      start = at + 1;
    }
    if (start < chunk.length) {
      if (overlong > 0 || pendingBytes + chunk.length - start > MAX_LINE_BYTES) {
        overlong += pendingBytes + chunk.length - start;
        pending = [];
        pendingBytes = 0;
      } else {
        pending.push(chunk.subarray(start));
        pendingBytes += chunk.length - start;
      }
    }
  }
  if (overlong > 0) yield overlong;
  else if (pending.length > 0) yield Buffer.concat(pending);
}

/**
 * The longest line of an NDJSON file, and the largest CSV record: far beyond any visit or
 * branch (a visit's text fields are at most 10,000 characters each), and small enough that
 * one line never takes the process's memory. A longer one is refused by its line number.
 */
export const MAX_LINE_BYTES = 16 * 1024 * 1024;

/**
 * The largest JSON array file, read whole: beyond it, NDJSON (read line by line) is the format.
 * Parsed, a file takes some five times its size of heap: under the image's 256 MB heap limit a
 * 49 MB file imported at a 336 MB peak and one of 123 MB ran out of memory.
 */
export const MAX_JSON_FILE_BYTES = 32 * 1024 * 1024;

async function* jsonArray(path: string): AsyncGenerator<FileRecord> {
  const { size } = await stat(path);
  if (size > MAX_JSON_FILE_BYTES) {
    throw new RecordFileError(`${path} is ${size} bytes: a JSON array file is read whole, up to ${MAX_JSON_FILE_BYTES} bytes; send a larger one as NDJSON (a record per line).`);
  }
  const bytes = await readFile(path);
  if (!isUtf8(bytes)) throw new RecordFileError(`${path} ${NOT_UTF8}.`);
  const text = bytes.toString('utf8').replace(BOM, '');
  let parsed: unknown;
  try {
    parsed = parseRecordJson(text);
  } catch (error) {
    throw new RecordFileError(`${path} is not valid JSON: ${(error as Error).message}`);
  }
  const items = Array.isArray(parsed) ? parsed : [parsed];
  const { lines, offsets } = Array.isArray(parsed) ? arrayElementStarts(text) : { lines: [1], offsets: [0] };
  for (let i = 0; i < items.length; i++) {
    const line = lines[i] ?? i + 1;
    // Each element's own text: from its start to the next one's (a comma and spaces after it are no key).
    const twice = duplicateKey(text.slice(offsets[i] ?? 0, offsets[i + 1] ?? text.length));
    if (twice !== null) yield { line, ...(Array.isArray(parsed) ? { element: i + 1 } : {}), error: twiceNamed(twice) };
    else yield { line, ...(Array.isArray(parsed) ? { element: i + 1 } : {}), value: items[i] };
  }
}

async function* ndjson(path: string): AsyncGenerator<FileRecord> {
  let line = 0;
  for await (const bytes of byteLines(path)) {
    line++;
    if (typeof bytes === 'number') {
      yield { line, error: `the line is ${bytes} bytes long: at most ${MAX_LINE_BYTES} bytes are read` };
      continue;
    }
    if (!isUtf8(bytes)) {
      yield { line, error: `the line ${NOT_UTF8}` };
      continue;
    }
    const read = bytes.toString('utf8');
    const text = line === 1 ? read.replace(BOM, '') : read;
    if (text.trim() === '') continue;
    let value: unknown;
    try {
      value = parseRecordJson(text);
    } catch (error) {
      yield { line, error: `not valid JSON: ${(error as Error).message}` };
      continue;
    }
    const twice = duplicateKey(text);
    yield twice === null ? { line, value } : { line, error: twiceNamed(twice) };
  }
}

/**
 * The names given more than once, each once, in the order of their second places. Told by a
 * set: a search of the names before each one took time with the square of their number (a
 * header of 80,000 columns, 5 s).
 */
function namedTwice(names: readonly string[]): string[] {
  const seen = new Set<string>();
  const twice = new Set<string>();
  for (const name of names) (seen.has(name) ? twice : seen).add(name);
  return [...twice];
}

/** The header row's names: it names the fields; one that names none the import knows (or no header at all) refuses the file. */
function csvHeader(path: string, cells: string[], known: readonly string[] | undefined): string[] {
  // Lines ended by CR alone (classic Mac OS) are no line ends here: the whole file is one row.
  if (cells.some((name) => name.includes('\r'))) {
    throw new RecordFileError(`${path}: its lines end in CR alone; save it with LF or CRLF line ends.`);
  }
  // Names are trimmed (`id, name`); values are not: a cell is kept as written.
  const names = cells.map((name) => name.trim());
  // Other names are ignored, as in JSON, and one in another case refuses its records by the
  // field to write; a header naming none of the fields is no header (a file of data alone).
  const none = known !== undefined && !names.some((name) => known.includes(name));
  const twice = namedTwice(names);
  // Two columns of one name: which is meant is the operator's to say (the last would win silently).
  if (twice.length > 0) {
    throw new RecordFileError(`${path}: the CSV header names a column more than once (${twice.map((n) => `'${n}'`).join(', ')}).`);
  }
  if (none) {
    throw new RecordFileError(
      `${path}: the CSV header names none of the columns (${names.map((n) => `'${n}'`).join(', ')}); its first row must name the columns, of ${known.join(', ')}.`,
    );
  }
  return names;
}

async function* csv(path: string, known?: readonly string[]): AsyncGenerator<FileRecord> {
  await mustBeUtf8(path);
  // A record of the wrong number of cells is refused by itself and the reading goes on; one
  // that breaks the file's structure (a quote not closed, a record over MAX_LINE_BYTES) leaves
  // the records after it unknowable, and refuses the file whole, before anything is written.
  // Lines are counted as csv-parse reads, in its callbacks: what it found and the file's line
  // the last record read ended on (a record that breaks the structure starts after it).
  const found: { rawLine: number; line: number; cells?: number }[] = [];
  // No header: 0 until the first row is read (an empty file, or one of blank lines only, has none).
  let columns = 0;
  // csv-parse counts a CRLF as two lines where it is not the record delimiter it found first
  // (inside a quoted cell, or in a file of mixed line ends): taken off, so that a record's line is the file's.
  let overcount = 0;
  const crlfs = (raw: string): number => raw.split('\r\n').length - 1;
  // A record is said by the line it starts on: csv-parse counts the one it ends on, after the
  // line ends inside its quoted cells (those `raw` holds around it aside: its own, and the
  // blank lines skipped before it).
  const within = (raw: string): number => raw.replace(/^(?:\r?\n)+/, '').replace(/\r?\n$/, '').split('\n').length - 1;
  let lastLine = 1;
  const broken = (message: string): RecordFileError =>
    new RecordFileError(`${path}: the record after line ${lastLine} is not valid CSV (${message}); the records after it cannot be told apart, so the file is refused whole and nothing of it was written.`);
  const parser = createReadStream(path).pipe(
    parseCsv({
      columns: (cells: string[]) => {
        const names = csvHeader(path, cells, known);
        columns = names.length;
        return names;
      },
      bom: true,
      skip_empty_lines: true,
      info: true,
      raw: true,
      relax_column_count: false,
      // Both line ends, in any mix: found from the first line only, a CRLF in an LF file left
      // its CR in the row's last cell, and an LF in a CRLF file joined two rows.
      record_delimiter: ['\r\n', '\n'],
      max_record_size: MAX_LINE_BYTES,
      skip_records_with_error: true,
      on_record: (row: CsvRow) => {
        overcount += crlfs(row.raw);
        lastLine = row.info.lines - overcount;
        return { ...row, line: lastLine - within(row.raw) };
      },
      on_skip: (problem, raw) => {
        if (!problem) return undefined;
        // Thrown, the parsing stops here: a record over the limit is said once, not again at
        // each further character of it (each time with a copy of the record: under the image's
        // 256 MB heap, a record of 17 MiB ran the command out of memory).
        if (!RECORD_LEVEL.has((problem as CsvProblem).code ?? '')) throw broken(problem.message);
        overcount += crlfs(raw ?? '');
        lastLine = ((problem as CsvProblem).lines ?? 0) - overcount;
        found.push({ rawLine: (problem as CsvProblem).lines ?? 0, line: lastLine - within(raw ?? ''), cells: (problem as CsvProblem & { record?: unknown[] }).record?.length });
        return undefined;
      },
    }),
  );
  // How many of `found` were said: they are read by their place, not shifted off one by one,
  // which moves every problem after each (100,000 records of the wrong number of cells in a row took 5 s).
  let said = 0;
  // The problems found before the record that ends on `rawLine` (csv-parse's count), in the file's order.
  function* before(rawLine: number): Generator<FileRecord> {
    while (said < found.length && found[said].rawLine < rawLine) {
      const { line, cells } = found[said++];
      yield { line, error: `not valid CSV: the record has ${cells === undefined ? 'another number of cells' : cells === 1 ? '1 cell' : `${cells} cells`}, the header names ${columns} columns` };
    }
    if (said === found.length) {
      found.length = 0;
      said = 0;
    }
  }
  try {
    for await (const row of parser as AsyncIterable<CsvRow & { line: number }>) {
      yield* before(row.info.lines);
      // CSV cannot tell an empty value from a missing one: an empty cell is a field not given.
      const value = Object.fromEntries(Object.entries(row.record).filter(([, cell]) => cell !== ''));
      yield { line: row.line, value, text: true };
    }
  } catch (error) {
    if (error instanceof RecordFileError) throw error;
    throw broken((error as Error).message);
  }
  // A file with no row at all is no CSV file of these records (an export that wrote nothing,
  // the wrong file): said, as a JSON file with nothing in it is, rather than imported as none.
  if (columns === 0) {
    throw new RecordFileError(`${path}: the file has no rows, not even a header; its first row must name the columns${known ? `, of ${known.join(', ')}` : ''}.`);
  }
  yield* before(Infinity);
}

/** A record as csv-parse gives it with `info` and `raw`. */
type CsvRow = { record: Record<string, string>; info: { lines: number }; raw: string };

type CsvProblem = Error & { code?: string; lines?: number };

/** csv-parse's errors that concern one record, after which the reading goes on at the next. */
const RECORD_LEVEL: ReadonlySet<string> = new Set(['CSV_RECORD_INCONSISTENT_COLUMNS', 'CSV_RECORD_INCONSISTENT_FIELDS_LENGTH']);

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
  /** The fields a CSV header may name; a header naming none of them refuses the file (others are ignored). */
  columns?: readonly string[];
}

/** Reads every record into memory (for small files such as branch or menu lists). */
export async function readAllRecords(path: string, options: RecordFileOptions = {}): Promise<FileRecord[]> {
  const all: FileRecord[] = [];
  for await (const record of readRecords(path, options)) all.push(record);
  return all;
}
