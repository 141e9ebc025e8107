import { ArgumentsHost, Catch, HttpException, Logger, type ExceptionFilter } from '@nestjs/common';
import type { Request, Response } from 'express';
import { methodsOfUnroutedPath } from './allowed-methods.js';
import { formatBytes } from './byte-size.js';
import { FORM_ESCAPES_TYPE } from './form-escapes.js';
import { loggableUrl, withoutCredentials } from './loggable-url.js';
import {
  BAD_REQUEST_DETAIL,
  isSelfRendering,
  newInstance,
  PROBLEM_CONTENT_TYPE,
  ProblemException,
  statusTitle,
  TOO_LARGE_DETAIL,
  type ProblemBody,
} from './problem.js';

/** Whatever else an error may carry that the response should see. */
interface RenderedError {
  status: number;
  detail: string;
  errors?: string[];
  headers: Record<string, string>;
}

const DEFAULT_DETAILS: Record<number, string> = {
  400: BAD_REQUEST_DETAIL,
  401: 'Authentication is required: send a valid svc-api-key header and bearer token.',
  403: 'The credentials do not entitle the caller to this request.',
  404: 'No resource exists at this address.',
  405: 'The method is not allowed on this resource.',
  413: 'The request body is larger than the service accepts.',
  415: 'The request body has a media type the endpoint does not accept.',
  429: 'Too many requests; retry after the time in Retry-After.',
  500: 'An internal error occurred. Quote the instance id when reporting it.',
  503: 'The service is temporarily unavailable; retry after the time in Retry-After.',
};

/** The most fields a form may have (body-parser's `parameterLimit`, its default). */
export const FORM_FIELDS_MAX = 1000;

const UNSUPPORTED_CODING = "The request body's Content-Encoding is not one the service reads: send it as it is, or as gzip, deflate or br.";

/** Whether a detail is the one a status gets when nothing more is known. */
export function isDefaultDetail(status: number, detail: string): boolean {
  return DEFAULT_DETAILS[status] === detail;
}

/** Errors meaning there is no room left on a disk: the operator must make some. */
const DISK_FULL = ['53100', 'SQLITE_FULL', 'ENOSPC'];

/**
 * Errors of storage that cannot be used now: a file system gone read-only, a disk failing (I/O
 * errors, PostgreSQL's 58030), the database file no longer writable, or damaged (SQLite's
 * "database disk image is malformed", a file that is no database); on a file of the images'
 * folder also permissions taken away. An operator's to mend, as a full disk is: nothing of the
 * request was written.
 */
const STORAGE_FAULT = /^(SQLITE_(READONLY|IOERR|CANTOPEN|PERM|CORRUPT|NOTADB)(_[A-Z_]+)?|EROFS|EIO|58030)$/;
const FILE_REFUSED = ['EACCES', 'EPERM'];

/**
 * Errors meaning the process may open no more files: its descriptors (EMFILE: `ulimit -n`, a
 * container's nofile) or the system's (ENFILE) all taken, by a flood of connections say. Gone
 * once they are given back: not a fault of the request.
 */
const NO_DESCRIPTORS = ['EMFILE', 'ENFILE'];

/**
 * Why an error is a 503 with Retry-After rather than a fault of this request (a 500): the
 * database cannot be reached right now (connection refused, dropped or timed out, server
 * shutting down, statement timeout), or a disk has no room left (the database's or the
 * images' folder). Undefined for any other error.
 */
export function unavailableCause(error: unknown): UnavailableCause | undefined {
  const e = error as { code?: unknown; message?: unknown; name?: unknown; driverError?: unknown; path?: unknown } | null;
  if (!e || typeof e !== 'object') return undefined;
  const driver = e.driverError ? unavailableCause(e.driverError) : undefined;
  if (driver) return driver;
  const code = typeof e.code === 'string' ? e.code : '';
  const message = typeof e.message === 'string' ? e.message : '';
  if (DISK_FULL.includes(code)) return 'disk-full';
  if (NO_DESCRIPTORS.includes(code)) return 'descriptors';
  // ImageFolderMissing: the images' folder gone while the service runs (an unmounted volume).
  if (STORAGE_FAULT.test(code) || (FILE_REFUSED.includes(code) && typeof e.path === 'string') || e.name === 'ImageFolderMissing') return 'storage';
  // TypeORM's query runner, released when its connection failed, refuses the transaction's next statement.
  if (e.name === 'QueryRunnerAlreadyReleasedError' || e.name === 'QueryRunnerProviderAlreadyReleasedError') return 'database';
  const unreachable =
    // 57P01 to 57P05: the server ended the connection (shut down, crashed, starting up, the
    // database dropped, or the session idle past idle_session_timeout, which a query sent as
    // it ended meets). 57014: the statement timeout (DATABASE_QUERY_TIMEOUT_MS) ran out on the server; 55P03 the
    // same for a lock another session holds, under a lock_timeout (the URL's own options, or
    // the database's or role's settings): the statement waited as long as it may. ENOTFOUND,
    // EAI_AGAIN: the server's name does not resolve (a Service being replaced). 3D000 and 28xxx:
    // the server refuses the login (its database dropped or being restored, the role's password
    // changed): a new connection cannot be had, which the service can do nothing about but wait.
    // 25006: a write in a read-only transaction: the server is a standby (a failover under way,
    // the service's address not yet moved to the new primary) or was made read-only for
    // maintenance (default_transaction_read_only). 42501: the role may not read or write the service's tables (grants missing): an
    // operator's to mend, as readiness says, not a fault of the request. 42P01 and 42703 (and
    // SQLite's "no such table" or "column"): a table or column the migrations have not made
    // yet, on a replica started with MIGRATIONS_RUN=false before they ran. 55000 with its
    // message: the database closed to new connections (ALLOW_CONNECTIONS false, for maintenance
    // or a restore); the code alone is also that of faults of the code, which stay 500s.
    (code === '55000' && /is not currently accepting connections/.test(message)) ||
    ['ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN', '57P01', '57P02', '57P03', '57P04', '57P05', '57014', '55P03', '53300', '3D000', '25006', '42501', '42P01', '42703', 'SQLITE_BUSY'].includes(code) ||
    // SQLite's lock held by another process, with its extended codes (a write-ahead log being
    // recovered, a snapshot moved past): a transaction's wait for the lock retries them all and
    // gives up with the last one's (see inTransaction).
    code.startsWith('SQLITE_BUSY_') ||
    code.startsWith('08') ||
    code.startsWith('28') ||
    (code === 'SQLITE_ERROR' && /^no such (table|column)/.test(message)) ||
    /Connection terminated|timeout exceeded when trying to connect|Query read timeout|connection timeout|Client has encountered a connection error|DataSource is not initialized|Driver not Connected/i.test(
      message,
    );
  return unreachable ? 'database' : undefined;
}

/** What made the service unavailable for a request (see unavailableCause). */
export type UnavailableCause = 'database' | 'disk-full' | 'storage' | 'descriptors';

/** Whether an error is a 503 (see unavailableCause). */
export function isDatabaseUnavailable(error: unknown): boolean {
  return unavailableCause(error) !== undefined;
}

const UNAVAILABLE: Record<UnavailableCause, RenderedError> = {
  database: { status: 503, detail: 'The database is unavailable; retry after the time in Retry-After.', headers: { 'Retry-After': '5' } },
  // Room is made by an operator, not in seconds: a client retrying at once only adds load.
  'disk-full': {
    status: 503,
    detail: 'The service has no room left to store data; nothing was written. Retry after the time in Retry-After.',
    headers: { 'Retry-After': '60' },
  },
  storage: {
    status: 503,
    detail: "The service's storage cannot be used now; nothing was changed. Retry after the time in Retry-After.",
    headers: { 'Retry-After': '60' },
  },
  descriptors: {
    status: 503,
    detail: 'The service cannot open more files now; nothing was changed. Retry after the time in Retry-After.',
    headers: { 'Retry-After': '5' },
  },
};

function render(exception: unknown): RenderedError {
  const unavailable = unavailableCause(exception);
  if (unavailable) return { ...UNAVAILABLE[unavailable], headers: { ...UNAVAILABLE[unavailable].headers } };
  if (exception instanceof ProblemException) {
    return {
      status: exception.getStatus(),
      detail: exception.detail,
      errors: exception.errors,
      headers: exception.headers,
    };
  }
  if (exception instanceof HttpException) {
    const status = exception.getStatus();
    // Framework errors (unknown route, body parser, multer) carry messages meant for people.
    const response = exception.getResponse();
    const message =
      typeof response === 'object' && response !== null && 'message' in response
        ? (response).message
        : response;
    const text = Array.isArray(message) ? message.join('; ') : typeof message === 'string' ? message : '';
    if (status === 400) return { status, detail: BAD_REQUEST_DETAIL, errors: [text || 'The request is malformed.'], headers: {} };
    // Express's router says `Cannot GET /path?query`. A path no route has, whatever the method
    // (a method the path lacks is a 405): said without the method, so that HEAD's answer is
    // GET's, and without the query, which may hold anything the caller sent (a secret); a
    // segment that is a credential by its form (an API key sent as a path) is said as a log
    // line says it, [redacted].
    const unrouted = status === 404 ? /^Cannot [A-Z-]+ ([^?]*)/s.exec(text) : null;
    const said = unrouted ? `No endpoint has the path ${loggableUrl(unrouted[1])}.` : text;
    const detail = status >= 500 ? DEFAULT_DETAILS[500] : said || DEFAULT_DETAILS[status] || statusTitle(status);
    return { status, detail: detail ?? statusTitle(status), headers: {} };
  }
  // Body parser errors are plain errors with a status (e.g. malformed JSON, entity too large).
  if (typeof exception === 'object' && exception !== null && 'status' in exception) {
    const status = Number((exception).status);
    const type = (exception as { type?: unknown }).type;
    // body-parser answers too many fields with a 413, which would say the body is too large.
    if (type === 'parameters.too.many') {
      return { status: 400, detail: BAD_REQUEST_DETAIL, errors: [`The form has more fields than the service accepts (${FORM_FIELDS_MAX}).`], headers: {} };
    }
    // A form whose escapes mean no text says which field holds them (see verifyFormEscapes).
    if (type === FORM_ESCAPES_TYPE) return { status: 400, detail: BAD_REQUEST_DETAIL, errors: [String((exception as { message?: unknown }).message)], headers: {} };
    // RFC 9110 §15.5.16: a 415 for a content coding says in Accept-Encoding which ones are read.
    if (type === 'encoding.unsupported') return { status: 415, detail: UNSUPPORTED_CODING, headers: { 'Accept-Encoding': 'gzip, deflate, br' } };
    // The JSON parser's own failure (JSON.parse's SyntaxError): said as such, not as any malformed body.
    if (type === 'entity.parse.failed' && exception instanceof SyntaxError) {
      return { status: 400, detail: BAD_REQUEST_DETAIL, errors: ['The request body is not valid JSON.'], headers: {} };
    }
    // A body its Content-Encoding does not undo (zlib's Z_DATA_ERROR, Z_BUF_ERROR for one cut
    // short): said as such, not as a body of the wrong form.
    const code = (exception as { code?: unknown }).code;
    if (status === 400 && typeof code === 'string' && code.startsWith('Z_')) {
      return { status, detail: BAD_REQUEST_DETAIL, errors: ['The request body cannot be decoded as its Content-Encoding says.'], headers: {} };
    }
    // A 413 names the limit the body broke, as the upload's does.
    const limit = (exception as { limit?: unknown }).limit;
    if (type === 'entity.too.large' && typeof limit === 'number') {
      return { status: 413, detail: TOO_LARGE_DETAIL, errors: [`The request body must be at most ${limit} bytes (${formatBytes(limit)}).`], headers: {} };
    }
    if (status >= 400 && status < 500) {
      const detail = DEFAULT_DETAILS[status] ?? statusTitle(status);
      return status === 400
        ? { status, detail: BAD_REQUEST_DETAIL, errors: ['The request body is malformed.'], headers: {} }
        : { status, detail, headers: {} };
    }
  }
  return { status: 500, detail: DEFAULT_DETAILS[500] ?? 'Internal error', headers: {} };
}

/**
 * Turns every error into `application/problem+json` (RFC 9457) with a fresh instance
 * URN, which is logged with the request so an operator can find a partner's failed call.
 * Nothing internal reaches the body of a 500.
 */
@Catch()
export class ProblemFilter implements ExceptionFilter {
  private readonly logger = new Logger('Problem');

  catch(exception: unknown, host: ArgumentsHost): void {
    const http = host.switchToHttp();
    const response = http.getResponse<Response>();
    const request = http.getRequest<Request>();
    // What the success would have been cached as (an image's year) is not the error's: no
    // error is stored, by a shared cache or the client's own (RFC 9111 would let a cache keep a
    // 404 or 405 by heuristics), so none outlives its cause.
    if (!response.headersSent) response.setHeader('Cache-Control', 'no-store');
    if (isSelfRendering(exception) && !response.headersSent) {
      const { status, contentType, body, headers } = exception.renderResponse();
      for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
      response.status(status).type(contentType).send(JSON.stringify(body));
      return;
    }
    const allowed = methodsOfUnroutedPath(exception, request);
    const { status, detail, errors, headers } =
      allowed.length > 0
        ? {
            status: 405,
            detail: `${request.method} is not allowed on ${request.path}; it answers ${allowed.join(', ')}.`,
            errors: undefined,
            headers: { Allow: allowed.join(', ') },
          }
        : render(exception);
    const instance = newInstance();
    // What the request sent is quoted, but never a credential (see withoutCredentials): in the answer and the log alike.
    const body: ProblemBody = { title: statusTitle(status), status, detail: withoutCredentials(detail), instance };
    if (errors && errors.length > 0) body.errors = errors.map(withoutCredentials);

    // The request logger picks this up for its one line per request.
    response.locals.problemInstance = instance;
    // The request id ties the line to the request's own line (and to what the partner saw in X-Request-Id).
    const requestId = (request as Request & { id?: unknown }).id;
    if (status === 503) {
      // What made it unavailable in one line: the stack of a refused connection says nothing more.
      // Storage that fails (read-only, I/O errors) is an error: no wait mends it.
      const cause = exception instanceof Error ? exception.message : String(exception);
      // So are descriptors all taken: their limit (nofile) is the operator's to raise.
      const level = ['storage', 'descriptors'].includes(unavailableCause(exception) ?? '') ? 'error' : 'warn';
      this.logger[level]({ instance, requestId, method: request.method, url: loggableUrl(request.originalUrl), cause }, detail);
    } else if (status >= 500) {
      this.logger.error({ err: exception, instance, requestId, method: request.method, url: loggableUrl(request.originalUrl) }, 'request failed');
    } else {
      // As answered: what the request sent is quoted, a credential by its form as [redacted], as
      // it is in the request's URL.
      this.logger.debug({ instance, status, errors: body.errors }, body.detail);
    }
    if (response.headersSent) {
      response.end();
      return;
    }
    this.send(response, body, headers);
  }

  /** Writes the problem document (a filter of an endpoint with another error format writes that instead). */
  protected send(response: Response, problem: ProblemBody, headers: Record<string, string>): void {
    for (const [name, value] of Object.entries(headers)) response.setHeader(name, value);
    response.status(problem.status).type(PROBLEM_CONTENT_TYPE).send(JSON.stringify(problem));
  }
}
