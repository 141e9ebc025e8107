import { HttpException } from '@nestjs/common';
import type { SelfRenderingError } from './problem.js';

/** RFC 6749 §5.2 error codes, plus RFC 8628's `slow_down` for too many failed attempts. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'slow_down';

/** The headers of every answer of the token endpoint, token or error (RFC 6749 §5.1, §5.2). */
export const NO_STORE_HEADERS: Readonly<Record<string, string>> = { 'Cache-Control': 'no-store', Pragma: 'no-cache' };

/**
 * An error of the token endpoint: rendered as the OAuth JSON body `{error, error_description}`
 * (not problem+json), with `Cache-Control: no-store`.
 */
export class OAuthException extends HttpException implements SelfRenderingError {
  constructor(
    readonly error: OAuthErrorCode,
    readonly description: string,
    status = 400,
    readonly headers: Record<string, string> = {},
  ) {
    super(description, status);
  }

  renderResponse(): { status: number; contentType: string; body: unknown; headers: Record<string, string> } {
    return {
      status: this.getStatus(),
      contentType: 'application/json',
      body: { error: this.error, error_description: this.description },
      headers: { ...NO_STORE_HEADERS, ...this.headers },
    };
  }
}
