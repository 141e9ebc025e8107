import type { IncomingMessage, ServerResponse } from 'node:http';
import { PreconditionFailedException } from '@nestjs/common';

/** The problem's detail when If-Match fails. */
export const IF_MATCH_FAILED = 'If-Match names no current representation: none of its entity tags is this one by strong comparison.';

/**
 * The members of an If-Match or If-None-Match field: `*` and entity tags (a quoted tag whole,
 * whatever commas it holds), and any other token as it stands. A field sent on several lines
 * arrives as one list (Node joins them with commas), so `*` may be one member of several: a
 * client (or a library and its caller) that said `*` twice still said `*`.
 */
function preconditionMembers(field: string): string[] {
  return field.match(/(?:W\/)?"[^"]*"|[^\s,"]+/g) ?? [];
}

/** Whether a field's members are `*` (once or more) and nothing else. */
function onlyAny(members: readonly string[]): boolean {
  return members.length > 0 && members.every((member) => member === '*');
}

/**
 * Whether an If-Match header, when sent, fails for the representation tagged `etag` (RFC 9110
 * §13.1.1): `*` passes; otherwise a listed tag must equal it by strong comparison, which a
 * weak tag on either side never passes.
 */
export function ifMatchFails(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  const members = preconditionMembers(header);
  if (onlyAny(members)) return false;
  if (etag.startsWith('W/')) return true;
  return !members.includes(etag);
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
    if (members.includes('*')) return true;
    const opaque = (tag: string): string => (tag.startsWith('W/') ? tag.slice(2) : tag);
    return members.some((tag) => tag.endsWith('"') && opaque(tag) === opaque(etag));
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
  if (ifMatchFails(req.headers['if-match'], etag)) throw new PreconditionFailedException(IF_MATCH_FAILED);
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
 * match what has none. If-None-Match naming tags always holds.
 */
export function writePrecondition(headers: IncomingMessage['headers'], what: string): 'absent' | 'present' | 'any' {
  const ifMatch = headers['if-match'];
  if (ifMatch !== undefined && !onlyAny(preconditionMembers(ifMatch))) {
    throw new PreconditionFailedException(`If-Match names entity tags, and ${what} has none: send If-Match: * to write only over an existing one.`);
  }
  // `*` among tags still asks for no current representation: the stricter reading of a field that is not one of the forms.
  const ifNoneMatch = headers['if-none-match'];
  const absent = ifNoneMatch !== undefined && preconditionMembers(ifNoneMatch).includes('*');
  if (absent && ifMatch !== undefined) throw new PreconditionFailedException('If-Match: * and If-None-Match: * cannot both hold: send one of them.');
  return absent ? 'absent' : ifMatch === undefined ? 'any' : 'present';
}
