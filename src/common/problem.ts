import { randomUUID } from 'node:crypto';
import { STATUS_CODES } from 'node:http';
import { HttpException } from '@nestjs/common';

export const PROBLEM_CONTENT_TYPE = 'application/problem+json';
export const INSTANCE_PREFIX = 'urn:svc:api:results:error:';

/** An RFC 9457 problem document as the service sends it. */
export interface ProblemBody {
  title: string;
  status: number;
  detail: string;
  instance: string;
  errors?: string[];
}

export function newInstance(): string {
  return `${INSTANCE_PREFIX}${randomUUID()}`;
}

export function statusTitle(status: number): string {
  return STATUS_CODES[status] ?? 'Error';
}

export interface ProblemOptions {
  /** One message per violated rule (400), or the limit a body broke (413). */
  errors?: string[];
  /** Response headers to set, such as `WWW-Authenticate` or `Retry-After`. */
  headers?: Record<string, string>;
}

/**
 * An error that becomes a problem+json response with the given status and detail.
 * Thrown by services and guards; rendered by the global ProblemFilter.
 */
export class ProblemException extends HttpException {
  readonly errors?: string[];
  readonly headers: Record<string, string>;

  constructor(status: number, readonly detail: string, options: ProblemOptions = {}) {
    super(detail, status);
    this.errors = options.errors;
    this.headers = options.headers ?? {};
  }
}

export const BAD_REQUEST_DETAIL = "The request could not be processed; see 'errors' for each rule it broke.";

/** A 400 listing every violated rule. */
export class ValidationProblem extends ProblemException {
  constructor(errors: string[]) {
    super(400, BAD_REQUEST_DETAIL, { errors });
  }
}

export const TOO_LARGE_DETAIL = "The request body is larger than the service accepts; see 'errors' for the limit.";

/** A 413 naming the limit the request body broke. */
export class PayloadTooLargeProblem extends ProblemException {
  constructor(errors: string[]) {
    super(413, TOO_LARGE_DETAIL, { errors });
  }
}

/** An error that renders its own body (the token endpoint's OAuth errors). */
export interface SelfRenderingError {
  renderResponse(): { status: number; contentType: string; body: unknown; headers: Record<string, string> };
}

export function isSelfRendering(error: unknown): error is SelfRenderingError {
  return typeof (error as Partial<SelfRenderingError> | null)?.renderResponse === 'function';
}
