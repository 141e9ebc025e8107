import { Catch, HttpException } from '@nestjs/common';
import type { Request, Response } from 'express';
import { isDefaultDetail, ProblemFilter } from './problem.filter.js';
import { withoutCredentials } from './loggable-url.js';
import { routeSpelling } from './path-escapes.js';
import type { ProblemBody, SelfRenderingError } from './problem.js';
import { oauthText } from './visible-text.js';

/** RFC 6749 §5.2 error codes, plus RFC 8628's `slow_down` for too many failed attempts. */
export type OAuthErrorCode =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'unauthorized_client'
  | 'unsupported_grant_type'
  | 'invalid_scope'
  | 'slow_down'
  // RFC 6749 §4.1.2.1's codes for a server that cannot answer now, or failed.
  | 'temporarily_unavailable'
  | 'server_error';

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
      body: oauthErrorBody(this.error, this.description),
      headers: { ...NO_STORE_HEADERS, ...this.headers },
    };
  }
}

/**
 * The OAuth JSON body of an error. Its description may hold printable ASCII but `"` and `\`
 * only (RFC 6749 §5.2), and often quotes what the client sent (a field's name, an Expect):
 * any other character is shown as `?`, so that a client never reads control characters,
 * text reordered by U+202E, or UTF-8 it decodes as another charset; a credential by its form
 * is `[redacted]` (see withoutCredentials).
 */
export function oauthErrorBody(error: OAuthErrorCode, description: string): { error: OAuthErrorCode; error_description: string } {
  return { error, error_description: oauthText(withoutCredentials(description)) };
}

/** What the token endpoint says of a form it could not read, for OAuth clients that show only error_description. */
export const FORM_DESCRIPTIONS: Readonly<Record<413 | 415, string>> = {
  413: 'The form is larger than the service accepts (16 KiB).',
  415: 'The form names a charset other than utf-8 or iso-8859-1.',
};

function codeFor(status: number): OAuthErrorCode {
  if (status === 401) return 'invalid_client';
  if (status === 429) return 'slow_down';
  if (status === 503) return 'temporarily_unavailable';
  if (status >= 500) return 'server_error';
  return 'invalid_request';
}

/**
 * The token endpoint's filter: every answer of it is OAuth JSON with `Cache-Control:
 * no-store` (RFC 6749 §5.2), also for what is not one of its own OAuth errors, such as a form
 * too large (413), in a charset not supported (415), or a database that cannot be reached
 * (503), which every other endpoint answers as problem+json. Status and headers (Retry-After)
 * stay; logging and the instance id in the request's line are the problem filter's.
 */
@Catch()
export class OAuthErrorFilter extends ProblemFilter {
  protected override send(response: Response, problem: ProblemBody, headers: Record<string, string>): void {
    sendAsOAuth(response, problem, headers);
  }
}

/** A problem said the OAuth way: its status and headers, an error code for the status, the description it gives. */
function sendAsOAuth(response: Response, problem: ProblemBody, headers: Record<string, string>): void {
  // A form too large or in another charset: said as a form, unless the problem says more (a coding not supported).
  // (A 413 here is always the form too large: the endpoint reads nothing else.)
  const form = problem.status === 413 || isDefaultDetail(problem.status, problem.detail) ? (FORM_DESCRIPTIONS as Record<number, string | undefined>)[problem.status] : undefined;
  const description = form ?? (problem.errors?.join(' ') || problem.detail);
  const rendered = new OAuthException(codeFor(problem.status), description, problem.status, headers).renderResponse();
  for (const [name, value] of Object.entries(rendered.headers)) response.setHeader(name, value);
  response.status(rendered.status).type(rendered.contentType).send(JSON.stringify(rendered.body));
}

/**
 * The app's filter: problem+json, except on the token endpoint's path, where every answer is
 * OAuth JSON with no-store. Its route's own filter (OAuthErrorFilter) covers what reaches the
 * route; this covers what no route took there: another method than POST, a 405 with `Allow`.
 * The path is matched as Express routes it: in any case, with or without a trailing slash.
 */
@Catch()
export class AppErrorFilter extends ProblemFilter {
  private readonly oauthAt: string;

  constructor(oauthPath: string) {
    super();
    this.oauthAt = oauthPath.toLowerCase();
  }

  protected override send(response: Response, problem: ProblemBody, headers: Record<string, string>): void {
    const path = (response.req as Request | undefined)?.path;
    if (path !== undefined && routeSpelling(path) === this.oauthAt) sendAsOAuth(response, problem, headers);
    else super.send(response, problem, headers);
  }
}
