import { createCipheriv, createDecipheriv, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { AppConfig } from '../config/app-config.js';

/** The longest page token accepted. */
export const PAGE_TOKEN_MAX_LENGTH = 2048;

/** The shape of every page token: two base64url parts joined by a dot. */
export const PAGE_TOKEN_PATTERN = '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$';

const TOKEN_SHAPE = new RegExp(PAGE_TOKEN_PATTERN);

/** First byte of a sealed token's first part; a signed token's first part is JSON (`{`). */
const SEALED = 1;
const IV_BYTES = 12;
const TAG_BYTES = 16;

type Payload = { s?: unknown; p?: unknown };

/** What a token of this service holds: the query it is bound to and the position after its page. */
export interface OpenedToken {
  scope: string;
  position: (string | number)[];
}

/** The message of a token that is not one of this service's, or not of a position the query can start from. */
export const PAGE_TOKEN_INVALID = "'after' is not a valid page token.";
/** The message of a valid token given with another query than the one it came from. */
export const PAGE_TOKEN_OF_ANOTHER_QUERY = "'after' is a page token of another query.";

/** Room a position has in a token: more than any position of the service takes (a date-time and an id). */
const POSITION_ROOM = 96;

/** Room a string of a position has in POSITION_ROOM, quoted: a date-time's. */
const STRING_ROOM = 32;

/**
 * A token's JSON, padded with spaces (which JSON.parse skips) to a length its query alone sets:
 * AES-GCM keeps the length of what it seals, so a position with one more digit (a client's
 * write sequence grown by other brands' writes) would otherwise make a longer token. A longer
 * string of a position (the brands and visit types a change-feed page was read with, the
 * credential's own) widens the room by what it takes beyond a date-time: it would otherwise
 * fill the room, and the digits beside it show in the length again.
 */
function padded(scope: string, position: (string | number)[]): string {
  const json = JSON.stringify({ s: scope, p: position });
  const beyond = position.reduce<number>((sum, part) => sum + (typeof part === 'string' ? Math.max(0, JSON.stringify(part).length - STRING_ROOM) : 0), 0);
  const room = JSON.stringify({ s: scope, p: [] }).length + POSITION_ROOM + beyond;
  return json.length >= room ? json : json.padEnd(room, ' ');
}

/**
 * Opaque page tokens: the position after the last item of a page, bound to the query it
 * came from (`scope`, such as `menus:1001`), so a token replayed with another query, edited,
 * or made up is refused with a 400 (the query's rules open it: see PageTokenParam).
 *
 * A token is sealed with AES-256-GCM under a fresh random IV: `<version, IV and
 * ciphertext>.<tag>`. Its position is a client's own write sequence or ids, which a
 * credential restricted to some brands must not read (how many writes other brands had
 * between two of its visits), nor tell from two tokens of the same position, so no token
 * is the same twice. Tokens issued before they were sealed (`<JSON>.<HMAC-SHA-256>`) are
 * still taken, since partners store change-feed tokens for as long as they sync.
 */
export class PageTokens {
  /** The key tokens are sealed under, then those whose tokens are opened too: no two alike. */
  private readonly keys: { key: string; sealKey: Buffer }[];

  /**
   * `key` seals; tokens sealed (or signed) under any of `accepted` are opened as well, so a
   * key can be changed replica by replica without a partner's token being refused (see
   * PAGE_TOKEN_ACCEPTED_KEYS).
   */
  constructor(key: string, accepted: readonly string[] = []) {
    this.keys = [...new Set([key, ...accepted])].map((each) => ({ key: each, sealKey: createHmac('sha256', each).update('page-token-seal').digest() }));
  }

  /** Tokens under PAGE_TOKEN_KEY, or else a key derived from API_KEY_HASH_KEY; and opened under PAGE_TOKEN_ACCEPTED_KEYS too. */
  static fromConfig(config: AppConfig): PageTokens {
    return new PageTokens(config.PAGE_TOKEN_KEY ?? derivedPageTokenKey(config.API_KEY_HASH_KEY), config.pageTokenAcceptedKeys);
  }

  encode(scope: string, position: (string | number)[]): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys[0].sealKey, iv);
    const sealed = Buffer.concat([Buffer.of(SEALED), iv, cipher.update(padded(scope, position), 'utf8'), cipher.final()]);
    return `${sealed.toString('base64url')}.${cipher.getAuthTag().toString('base64url')}`;
  }

  /**
   * The query a token is bound to and the position it holds; undefined when it is no token
   * this service issued under one of its keys (edited, truncated, made up, or of another key).
   */
  open(token: string): OpenedToken | undefined {
    if (token.length > PAGE_TOKEN_MAX_LENGTH || !TOKEN_SHAPE.test(token)) return undefined;
    const [first, second] = token.split('.');
    const body = Buffer.from(first, 'base64url');
    // Node's base64 decoding passes over characters it does not know, and bits past the last
    // byte: only the text this service wrote for these bytes is its token.
    if (body.toString('base64url') !== first) return undefined;
    let text: string | undefined;
    for (const { key, sealKey } of this.keys) {
      text = body[0] === SEALED ? unseal(sealKey, body, second) : verified(key, first, second);
      if (text !== undefined) break;
    }
    let payload: Payload;
    try {
      payload = JSON.parse(text ?? '') as Payload;
    } catch {
      return undefined;
    }
    if (payload === null || typeof payload !== 'object' || typeof payload.s !== 'string' || !Array.isArray(payload.p)) return undefined;
    return { scope: payload.s, position: payload.p as (string | number)[] };
  }
}

/** The page token key of a deployment that sets no PAGE_TOKEN_KEY: README, "Key rotation and backup", gives its command. */
export function derivedPageTokenKey(apiKeyHashKey: string): string {
  return createHmac('sha256', apiKeyHashKey).update('page-tokens').digest('hex');
}

/** A sealed token's JSON, or undefined when it was not sealed under this key. */
function unseal(sealKey: Buffer, body: Buffer, tag: string): string | undefined {
  const authTag = Buffer.from(tag, 'base64url');
  if (body.length <= 1 + IV_BYTES || authTag.length !== TAG_BYTES || authTag.toString('base64url') !== tag) return undefined;
  try {
    const decipher = createDecipheriv('aes-256-gcm', sealKey, body.subarray(1, 1 + IV_BYTES));
    decipher.setAuthTag(authTag);
    return Buffer.concat([decipher.update(body.subarray(1 + IV_BYTES)), decipher.final()]).toString('utf8');
  } catch {
    return undefined;
  }
}

/** A signed (earlier) token's JSON, or undefined when its signature is not this key's. */
function verified(key: string, body: string, signature: string): string | undefined {
  const expected = Buffer.from(createHmac('sha256', key).update(body).digest('base64url'));
  const given = Buffer.from(signature);
  if (expected.length !== given.length || !timingSafeEqual(expected, given)) return undefined;
  return Buffer.from(body, 'base64url').toString('utf8');
}
