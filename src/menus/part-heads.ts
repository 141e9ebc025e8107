import { parameterValue, repeatedParameter } from '../common/media-parameters.js';

/** The headers of a part that may appear once (RFC 7578 §4.8 names these three). */
const ONCE = new Map([
  ['content-disposition', 'Content-Disposition'],
  ['content-type', 'Content-Type'],
  ['content-transfer-encoding', 'Content-Transfer-Encoding'],
]);

/** The most a part's headers may take: past it the multipart reader refuses the body itself. */
const HEAD_MAX = 16 * 1024;

const CRLF = Buffer.from('\r\n');

/** What one step of the watcher's scan gives: wait for more bytes, go on, or refuse the form. */
const MORE = 'more';
const NEXT = 'next';
type Step = typeof MORE | typeof NEXT | { refuse: string };
const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * The boundary a multipart Content-Type names (quoted or not), as the multipart reader takes it;
 * undefined without one. A `; boundary=` inside another parameter's quoted string is none: the
 * reader passes over it, and a watcher seeking it would have seen no part head at all.
 */
export function boundaryOf(contentType: string): string | undefined {
  return parameterValue(contentType, 'boundary');
}

/**
 * The watcher of a multipart body's part heads (see PartHeadWatcher), null without a boundary
 * (the multipart reader refuses that body itself). A Content-Type naming its boundary twice
 * never comes here: it is refused with the request's head (see malformedHead).
 */
export function partHeadWatcher(contentType: string | undefined): PartHeadWatcher | null {
  const boundary = boundaryOf(contentType ?? '');
  return boundary === undefined ? null : new PartHeadWatcher(boundary);
}

/**
 * Watches a multipart body as it streams, beside the multipart reader, for part headers that
 * could be read two ways: a Content-Disposition, Content-Type or Content-Transfer-Encoding
 * given twice in one part (the reader would take the first, another reader the last), or one
 * of their parameters given twice (`name`, `filename`, `charset`). Such a part is refused, as a
 * query parameter or a JSON key given twice is. What the body breaks otherwise (no closing
 * boundary, headers too large) is the reader's to say: the watcher then says nothing.
 */
export class PartHeadWatcher {
  private readonly delimiter: Buffer;
  /** Bytes not yet looked at, from the last place a delimiter or the end of a head could start. */
  private pending: Buffer;
  private mode: 'seek' | 'boundary-line' | 'head' | 'done' = 'seek';
  /** The charset each text part (form-data without a filename) names, by the part's name; the last such part of a name. */
  private readonly charsets = new Map<string, string | undefined>();

  constructor(boundary: string) {
    this.delimiter = Buffer.from(`\r\n--${boundary}`, 'latin1');
    // The first delimiter may open the body without the line break before it.
    this.pending = CRLF;
  }

  /** Looks at the next bytes of the body; gives why the form cannot be read one way, once it is known. */
  feed(chunk: Buffer): string | undefined {
    if (this.mode === 'done') return undefined;
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    for (;;) {
      const step = this.step();
      if (step === MORE) return undefined;
      if (step !== NEXT) {
        this.mode = 'done';
        return step.refuse;
      }
    }
  }

  /** One step of the scan: MORE when the bytes so far say no more, NEXT to go on, or why the form is refused. */
  private step(): Step {
    switch (this.mode) {
      case 'seek': {
        const at = this.pending.indexOf(this.delimiter);
        if (at < 0) {
          // Keep what could be the start of a delimiter cut by the chunk's end.
          this.pending = this.pending.subarray(Math.max(0, this.pending.length - this.delimiter.length + 1));
          return MORE;
        }
        this.pending = this.pending.subarray(at + this.delimiter.length);
        this.mode = 'boundary-line';
        return NEXT;
      }
      case 'boundary-line': {
        if (this.pending.length < 2) return MORE;
        // The closing delimiter: what follows is the epilogue.
        if (this.pending[0] === 0x2d && this.pending[1] === 0x2d) return this.finish();
        const end = this.pending.indexOf(CRLF);
        if (end < 0) return this.pending.length > HEAD_MAX ? this.finish() : MORE;
        this.pending = this.pending.subarray(end);
        this.mode = 'head';
        return NEXT;
      }
      case 'head': {
        // The head starts after the boundary line's CRLF (kept in `pending`), so an empty one is CRLF CRLF too.
        const end = this.pending.indexOf(HEAD_END);
        if (end < 0 || end > HEAD_MAX) return end > HEAD_MAX || this.pending.length > HEAD_MAX ? this.finish() : MORE;
        const fields = unfolded(this.pending.toString('latin1', 2, end));
        const reason = ambiguousHead(fields);
        if (reason !== undefined) return { refuse: reason };
        const text = textPart(fields);
        if (text !== undefined) this.charsets.set(text.name, text.charset);
        // The part's body begins after the blank line; the delimiter that ends it starts with its own CRLF.
        this.pending = this.pending.subarray(end + HEAD_END.length);
        this.mode = 'seek';
        return NEXT;
      }
      case 'done':
        return MORE;
    }
  }

  /**
   * The charset (in lower case) the text part `name` names in its Content-Type, as the
   * multipart reader takes it; undefined when it names none, or no such part was seen.
   */
  charsetOf(name: string): string | undefined {
    return this.charsets.get(name);
  }

  private finish(): typeof MORE {
    this.mode = 'done';
    this.pending = Buffer.alloc(0);
    return MORE;
  }
}

/**
 * A head's header fields, each on one line: a line that starts with a space or a tab continues
 * the field before it (obs-fold), as the multipart reader takes it, which then reads a parameter
 * folded onto its own line (`name="json"` CRLF SP `; name="x"`) as one of the field's.
 */
function unfolded(head: string): string[] {
  const fields: string[] = [];
  for (const line of head.split('\r\n')) {
    if ((line.startsWith(' ') || line.startsWith('\t')) && fields.length > 0) fields[fields.length - 1] += line;
    else fields.push(line);
  }
  return fields;
}

/**
 * A head's text part (its header fields, unfolded), as the multipart reader tells one: a form-data part with a name and
 * without a filename; its name and the charset its Content-Type names (in lower case). Undefined
 * for a file part, or a part the reader passes over.
 */
function textPart(fields: readonly string[]): { name: string; charset: string | undefined } | undefined {
  let disposition: string | undefined;
  let contentType: string | undefined;
  for (const line of fields) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    if (name === 'content-disposition') disposition ??= line.slice(colon + 1);
    else if (name === 'content-type') contentType ??= line.slice(colon + 1);
  }
  if (disposition === undefined || disposition.split(';')[0].trim().toLowerCase() !== 'form-data') return undefined;
  const name = parameterValue(disposition, 'name');
  if (name === undefined || parameterValue(disposition, 'filename') !== undefined || parameterValue(disposition, 'filename*') !== undefined) return undefined;
  if (contentType !== undefined && /^\s*application\/octet-stream\s*(?:;|$)/i.test(contentType)) return undefined;
  return { name, charset: contentType === undefined ? undefined : parameterValue(contentType, 'charset')?.toLowerCase() };
}

/** Why a part's head (its header fields, unfolded) cannot be read one way, if it cannot. */
function ambiguousHead(fields: readonly string[]): string | undefined {
  const seen = new Set<string>();
  for (const line of fields) {
    const colon = line.indexOf(':');
    if (colon <= 0) continue;
    const name = line.slice(0, colon).trim().toLowerCase();
    const header = ONCE.get(name);
    if (header === undefined) continue;
    if (seen.has(name)) return `A part of the form has its ${header} header more than once: send each part header once.`;
    seen.add(name);
    const repeated = repeatedParameter(header, line.slice(colon + 1));
    if (repeated !== undefined) return `A part of the form ${repeated}: send each once.`;
  }
  return undefined;
}
