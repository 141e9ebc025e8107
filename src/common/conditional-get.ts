import type { IncomingMessage, ServerResponse } from 'node:http';
import { PreconditionFailedException } from '@nestjs/common';

/** The problem's detail when If-Match fails. */
export const IF_MATCH_FAILED = 'If-Match names no current representation: none of its entity tags is this one by strong comparison.';

/**
 * The members of an If-Match or If-None-Match field (RFC 9110 §13.1.1: `*` or a list of entity
 * tags, `"tag"` or `W/"tag"`, whose quoted part may hold commas), or null when the field is no
 * such list: a tag without its quotes (`abc`), with something before or after them (`x"abc"`,
 * `"abc";q=1`), or a weak marker that is not `W/` (`w/"abc"`, `W/W/"abc"`). A field sent on
 * several lines arrives as one list (Node joins them with commas), so `*` may be one member of
 * several: a client (or a library and its caller) that said `*` twice still said `*`.
 */
export function preconditionMembers(field: string): string[] | null {
  const members: string[] = [];
  const end = field.length;
  let at = 0;
  for (;;) {
    // Empty members and the space around them are allowed (RFC 9110 §5.6.1).
    while (at < end && (field[at] === ' ' || field[at] === '\t' || field[at] === ',')) at++;
    if (at === end) return members;
    const start = at;
    if (field[at] === '*') {
      at++;
    } else {
      if (field.startsWith('W/', at)) at += 2;
      if (field[at] !== '"') return null;
      const close = field.indexOf('"', at + 1);
      if (close < 0) return null;
      // etagc: visible characters but the quote, and obs-text; no space or control.
      for (let i = at + 1; i < close; i++) {
        const code = field.charCodeAt(i);
        if (code < 0x21 || code === 0x7f) return null;
      }
      at = close + 1;
    }
    members.push(field.slice(start, at));
    while (at < end && (field[at] === ' ' || field[at] === '\t')) at++;
    if (at < end && field[at] !== ',') return null;
  }
}

/** Whether a field's members are `*` (once or more) and nothing else. */
function onlyAny(members: readonly string[] | null): boolean {
  return members !== null && members.length > 0 && members.every((member) => member === '*');
}

/**
 * Why an If-Match header, when sent, fails for the representation tagged `etag` (RFC 9110
 * §13.1.1), as a 412's detail; null when it holds. `*` passes; otherwise a listed tag must
 * equal it by strong comparison, which a weak tag on either side never passes. A field that is
 * no list of tags (see preconditionMembers) names no tag that could pass: it fails, as nothing
 * can be shown to match.
 */
export function ifMatchFailure(header: string | undefined, etag: string): string | null {
  if (header === undefined) return null;
  const members = preconditionMembers(header);
  if (members === null) return `${notAList('If-Match')}.`;
  if (onlyAny(members)) return null;
  return etag.startsWith('W/') || !members.includes(etag) ? IF_MATCH_FAILED : null;
}

/**
 * Whether the request's If-None-Match (or, without one, If-Modified-Since) says the client
 * holds the current representation (RFC 9110 §13.1.2, §13.1.3): `*`, or a listed tag equal to
 * `etag` by weak comparison. A request's `Cache-Control: no-cache` does not change it: that
 * directive asks caches on the way to revalidate with the origin, which is what a conditional
 * request is (Node's fetch adds it to every request with If-None-Match).
 */
export function holdsCurrent(headers: IncomingMessage['headers'], etag: string, lastModified?: string): boolean {
  const ifNoneMatch = headers['if-none-match'];
  if (ifNoneMatch !== undefined) {
    const members = preconditionMembers(ifNoneMatch);
    // A field that is no list of tags holds none the client could hold: the full answer, and
    // If-Modified-Since is still not weighed, as it never is beside If-None-Match.
    if (members === null) return false;
    if (members.includes('*')) return true;
    const opaque = (tag: string): string => (tag.startsWith('W/') ? tag.slice(2) : tag);
    return members.some((tag) => opaque(tag) === opaque(etag));
  }
  const since = headers['if-modified-since'];
  if (since === undefined || lastModified === undefined) return false;
  const [sinceAt, modifiedAt] = [Date.parse(since), Date.parse(lastModified)];
  return !Number.isNaN(sinceAt) && !Number.isNaN(modifiedAt) && modifiedAt <= sinceAt;
}

/**
 * Sets the response's validator, then evaluates the request's preconditions in the order of
 * RFC 9110 §13.2.2 for a GET or HEAD whose status so far is a 2xx: a failed If-Match throws
 * a 412 (If-Unmodified-Since does not apply: these representations have no modification
 * date); an If-None-Match that matches (weak comparison, a list of tags or `*`; see
 * holdsCurrent) answers 304 Not Modified. True when the 304 was sent and nothing
 * more is to be done. Call it once the response carries every header the 200 would (a 304
 * repeats them, Vary included), before the body is prepared.
 */
export function answeredNotModified(req: IncomingMessage, res: ServerResponse, etag: string): boolean {
  res.setHeader('ETag', etag);
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  const status = res.statusCode;
  if (!((status >= 200 && status < 300) || status === 304)) return false;
  const failure = ifMatchFailure(req.headers['if-match'], etag);
  if (failure !== null) throw new PreconditionFailedException(failure);
  const lastModified = res.getHeader('Last-Modified');
  if (!holdsCurrent(req.headers, etag, typeof lastModified === 'string' ? lastModified : undefined)) return false;
  res.statusCode = 304;
  res.end();
  return true;
}

/**
 * What a write's preconditions ask of the resource it writes, which has no entity tag (RFC 9110
 * §13.2.2, in its order): `absent` for `If-None-Match: *` (create only; also when `*` is one of
 * several members, as a field sent twice arrives), `present` for `If-Match: *` (replace only),
 * `any` without either. If-Match naming tags fails at once (a 412 problem, thrown): no tag can
 * match what has none. If-None-Match naming tags always holds. A field that is neither `*` nor
 * a list of tags (see preconditionMembers) is a 412 as well, and nothing is written: what the
 * client meant to ask for cannot be told, and writing anyway might replace what it meant to keep.
 */
export function writePrecondition(headers: IncomingMessage['headers'], what: string): 'absent' | 'present' | 'any' {
  const ifMatch = headers['if-match'];
  if (ifMatch !== undefined) {
    const members = preconditionMembers(ifMatch);
    if (members === null) throw new PreconditionFailedException(`${notAList('If-Match')}, and nothing was written: send If-Match: * to write only over an existing one.`);
    if (!onlyAny(members)) throw new PreconditionFailedException(`If-Match names entity tags, and ${what} has none: send If-Match: * to write only over an existing one.`);
  }
  // `*` among tags still asks for no current representation: the stricter reading of a field that is not one of the forms.
  const ifNoneMatch = headers['if-none-match'];
  const noneMatch = ifNoneMatch === undefined ? [] : preconditionMembers(ifNoneMatch);
  if (noneMatch === null) throw new PreconditionFailedException(`${notAList('If-None-Match')}, and nothing was written: send If-None-Match: * to add only, or leave it out.`);
  const absent = noneMatch.includes('*');
  if (absent && ifMatch !== undefined) throw new PreconditionFailedException('If-Match: * and If-None-Match: * cannot both hold: send one of them.');
  return absent ? 'absent' : ifMatch === undefined ? 'any' : 'present';
}

/** The start of a 412's detail for a precondition field that is neither `*` nor a list of entity tags. */
function notAList(field: string): string {
  return `${field} is neither * nor a list of entity tags ("tag" or W/"tag")`;
}
