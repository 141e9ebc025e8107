import { createHmac, timingSafeEqual } from 'node:crypto';
import type { AppConfig } from '../config/app-config.js';
import { ValidationProblem } from './problem.js';

/** The longest page token accepted. */
export const PAGE_TOKEN_MAX_LENGTH = 2048;

/** The shape of every page token: a base64url body and its base64url signature. */
export const PAGE_TOKEN_PATTERN = '^[A-Za-z0-9_-]+\\.[A-Za-z0-9_-]+$';

/**
 * Opaque page tokens: the position after the last item of a page, bound to the query it
 * came from (`scope`, such as `menus:1001`) and signed, so a token replayed with another
 * query, edited, or made up is refused with a 400.
 */
export class PageTokens {
  constructor(private readonly key: string) {}

  /** Tokens under PAGE_TOKEN_KEY, or else a key derived from API_KEY_HASH_KEY. */
  static fromConfig(config: AppConfig): PageTokens {
    return new PageTokens(config.PAGE_TOKEN_KEY ?? createHmac('sha256', config.API_KEY_HASH_KEY).update('page-tokens').digest('hex'));
  }

  private sign(body: string): string {
    return createHmac('sha256', this.key).update(body).digest('base64url');
  }

  encode(scope: string, position: (string | number)[]): string {
    const body = Buffer.from(JSON.stringify({ s: scope, p: position })).toString('base64url');
    return `${body}.${this.sign(body)}`;
  }

  /** The position a token holds; a 400 problem when it is not a token of this query. */
  decode(scope: string, token: string): (string | number)[] {
    const invalid = new ValidationProblem(["'after' is not a valid page token."]);
    const [body, signature, extra] = token.split('.');
    if (!body || !signature || extra !== undefined || token.length > PAGE_TOKEN_MAX_LENGTH) throw invalid;
    const expected = Buffer.from(this.sign(body));
    const given = Buffer.from(signature);
    if (expected.length !== given.length || !timingSafeEqual(expected, given)) throw invalid;
    let payload: { s?: unknown; p?: unknown };
    try {
      payload = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as { s?: unknown; p?: unknown };
    } catch {
      throw invalid;
    }
    if (payload.s !== scope) throw new ValidationProblem(["'after' is a page token of another query."]);
    if (!Array.isArray(payload.p)) throw invalid;
    return payload.p as (string | number)[];
  }
}
