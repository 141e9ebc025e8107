import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import busboy from 'busboy';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { discardBody, lingerAfterResponse } from '../common/body-drain.js';
import { formatBytes } from '../common/byte-size.js';
import { awaitsContinue, declineContinue } from '../common/expect-continue.js';
import { PayloadTooLargeProblem, ProblemException, ValidationProblem } from '../common/problem.js';
import { visibleName } from '../common/visible-text.js';
import type { AuthenticatedRequest } from '../auth/principal.js';
import { AppConfig } from '../config/app-config.js';
import { imageTooLargeMessage } from './image-inspector.js';
import { partHeadWatcher } from './part-heads.js';
import { DISH_JSON_PART_MAX_BYTES } from './dto/menu.dto.js';
import { UNDECLARED_CHARSET, type UploadParts } from './dish-upload-form.js';
import { UploadsInFlight } from './uploads-in-flight.js';

/** Room for the json part and the multipart framing on top of the image itself. */
const FORM_OVERHEAD = 256 * 1024;
/**
 * A body over the limit is still read to its end, and dropped, up to this many times the
 * largest form or for DRAIN_MS, so that a client that writes the whole body before it reads
 * can read the 413 after it. A body declared larger than that is answered at once.
 */
const DRAIN_FACTOR = 4;
const DRAIN_MS = 10_000;
/** How long a connection answered before its body ended keeps reading after the response. */
const LINGER_MS = 10_000;

export interface UploadRequest extends Request, AuthenticatedRequest {
  uploadParts?: UploadParts;
  /**
   * Why the body could not be read as the form (not multipart, malformed, a part too large):
   * reported with the query's broken rules and the form's in one 400 (see MenusController.upload).
   */
  uploadErrors?: string[];
}

/**
 * Reads the multipart form of POST /menus/dishes while it streams (busboy): at most one
 * image of at most IMAGE_MAX_BYTES is held in memory. A larger body is a 413: nothing more
 * of it is kept, the rest is read and dropped (up to a bound), and the connection closes
 * after the response without resetting, so every client can read it. Parts without a name,
 * or with an empty one, are the image, as the interface shows them. Bodies being received
 * and held count against UPLOADS_IN_FLIGHT_MB (see UploadsInFlight): one that does not fit
 * is a 503, none of it read, and the connection closes after the response.
 */
@Injectable()
export class DishUploadInterceptor implements NestInterceptor {
  private readonly maxForm: number;
  private readonly drainBytes: number;

  constructor(
    private readonly config: AppConfig,
    private readonly inFlight: UploadsInFlight,
  ) {
    this.maxForm = config.IMAGE_MAX_BYTES + FORM_OVERHEAD;
    this.drainBytes = DRAIN_FACTOR * this.maxForm;
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const request = http.getRequest<UploadRequest>();
    const response = http.getResponse<Response>();
    if (!request.is('multipart/form-data')) {
      request.uploadErrors = ['The request must be multipart/form-data with an image part and a json part.'];
      return next.handle();
    }
    try {
      // The form is read as it comes: one sent in a content coding would be read as the coded
      // bytes. An empty field names no coding (RFC 9110 §5.6.1), as the token form takes it.
      const coding = request.headers['content-encoding'];
      if (coding !== undefined && !['', 'identity'].includes(coding.trim().toLowerCase())) {
        throw new ProblemException(415, `The upload's Content-Encoding '${coding.slice(0, 50)}' is not read: send the multipart body as it is, with no Content-Encoding.`, {
          headers: { 'Accept-Encoding': 'identity' },
        });
      }
      const declared = Number(request.headers['content-length']);
      if (Number.isFinite(declared) && declared > this.maxForm) {
        // Too large by its declared length: none of it is parsed, nor asked for when the client
        // waits for a 100 Continue; a body on its way is read and dropped, up to the drain bound.
        if (declared <= this.drainBytes && !awaitsContinue(response)) await discardBody(request, { maxBytes: this.drainBytes, maxMs: DRAIN_MS });
        throw this.tooLarge();
      }
      // What the body can hold: its declared length, or the largest form when it declares none (chunked).
      await this.inFlight.admit(request, response, Number.isFinite(declared) ? declared : this.maxForm, request.principal?.clientId);
      request.uploadParts = await this.read(request);
    } catch (error) {
      response.setHeader('Connection', 'close');
      // The rest of a refused body is not asked for: a client still waiting for its 100 gets the answer instead.
      declineContinue(request);
      if (!request.complete) lingerAfterResponse(request, LINGER_MS);
      // A body over the limit is refused as it arrives (413), before any other rule is weighed.
      if (!(error instanceof ValidationProblem)) throw error;
      request.uploadErrors = error.errors ?? ['The multipart body is malformed.'];
    }
    return next.handle();
  }

  private tooLarge(): PayloadTooLargeProblem {
    return new PayloadTooLargeProblem([imageTooLargeMessage(this.config.IMAGE_MAX_BYTES)]);
  }

  private formTooLarge(): PayloadTooLargeProblem {
    return new PayloadTooLargeProblem([
      `The form must be at most ${this.maxForm} bytes (${formatBytes(this.maxForm)}): one image part of at most ${formatBytes(this.config.IMAGE_MAX_BYTES)} and one json part of at most 64 KiB.`,
    ]);
  }

  /**
   * busboy reports a limit once a file reaches it: one byte more, so that an image of exactly
   * IMAGE_MAX_BYTES is taken. Fields likewise: a json part of exactly DISH_JSON_PART_MAX_BYTES is taken.
   */
  private limits(): busboy.Limits {
    return { fileSize: this.config.IMAGE_MAX_BYTES + 1, files: 3, fields: 4, parts: 6, fieldSize: DISH_JSON_PART_MAX_BYTES + 1, fieldNameSize: 100 };
  }

  private read(request: Request): Promise<UploadParts> {
    return new Promise((resolve, reject) => {
      const parts: UploadParts = { files: [], fields: {}, fieldsAsLatin1: {} };
      let failed = false;
      let received = 0;
      let parser: busboy.Busboy;
      let twin: busboy.Busboy;
      const stop = (): boolean => {
        if (failed) return false;
        failed = true;
        request.unpipe(parser);
        request.unpipe(twin);
        request.resume();
        return true;
      };
      const fail = (message: string): void => {
        if (stop()) reject(new ValidationProblem([message]));
      };
      const tooLarge = (problem: PayloadTooLargeProblem): void => {
        if (!stop()) return;
        void discardBody(request, { maxBytes: this.drainBytes - received, maxMs: DRAIN_MS }).then(() => reject(problem));
      };
      // Thrown here, a refusal of the Content-Type rejects the promise.
      const heads = partHeadWatcher(request.headers['content-type']);
      try {
        // A text part that declares no charset is handed over as its bytes (see fieldText).
        parser = busboy({ headers: request.headers, defCharset: UNDECLARED_CHARSET, limits: this.limits() });
        twin = latin1Reading(request, parts.fieldsAsLatin1, this.limits());
      } catch {
        reject(new ValidationProblem(['The multipart body is malformed: its boundary is missing.']));
        return;
      }
      let closed = 0;
      const closeOne = (): void => {
        if (++closed === 2 && !failed) resolve({ ...parts, jsonCharset: heads?.charsetOf('json') });
      };
      twin.on('close', closeOne);
      refuseCodedParts(parser, fail);
      parser.on('file', (name: string | undefined, stream, info) => {
        const chunks: Buffer[] = [];
        let size = 0;
        // A body that ends inside a file part fails the part's stream too: unheard, that error would end the process.
        stream.on('error', (error: Error) => fail(malformedBecause(error)));
        stream.on('data', (chunk: Buffer) => {
          size += chunk.length;
          // The json part sent as a file is held to the size of the json field, not to the image's.
          if (name === 'json' && size > DISH_JSON_PART_MAX_BYTES) {
            chunks.length = 0;
            fail(`The 'json' part is larger than 64 KiB.`);
            return;
          }
          if (!failed) chunks.push(chunk);
        });
        stream.on('limit', () => {
          chunks.length = 0;
          tooLarge(this.tooLarge());
        });
        stream.on('end', () => {
          if (!failed) parts.files.push({ fieldname: name ?? '', originalname: info.filename ?? '', buffer: Buffer.concat(chunks) });
        });
      });
      parser.on('field', (name: string | undefined, value: string | undefined, info) => {
        const key = name ?? '';
        // busboy takes a part without a filename for a text field: one named as the image part is meant as it.
        if (key === '' || key === 'file') return fail(`The image part ('${key}') has no filename: send it as a file, with Content-Disposition: form-data; name="${key}"; filename="dish.jpg".`);
        if (info.valueTruncated) return fail(`The '${key}' part is larger than 64 KiB.`);
        // busboy gives no value for a part whose declared charset it cannot decode (UTF-16, say).
        if (value === undefined) return fail(`The '${key}' part is in a charset the service cannot read: send it as UTF-8.`);
        const previous = parts.fields[key];
        parts.fields[key] = previous === undefined ? value : ([] as unknown[]).concat(previous, value);
      });
      parser.on('filesLimit', () => fail('Send one image part only.'));
      parser.on('partsLimit', () => fail('The form has too many parts: send one image part and one json part.'));
      parser.on('fieldsLimit', () => fail('The form has too many fields: send one image part and one json part.'));
      parser.on('error', (error: Error) => fail(malformedBecause(error)));
      parser.on('close', closeOne);
      request.on('aborted', () => fail('The upload was interrupted.'));
      request.on('data', (chunk: Buffer) => {
        const unclear = heads?.feed(chunk);
        if (unclear !== undefined) fail(unclear);
        // Past the largest form, not by an image (its part's limit comes first): a text part busboy would read to its end, a preamble.
        if ((received += chunk.length) > this.maxForm) tooLarge(this.formTooLarge());
      });
      request.pipe(parser);
      request.pipe(twin);
    });
  }
}

/**
 * The body read once more, only to tell the text parts that name a charset from those that do
 * not: an undeclared part comes as latin1 here and as base64 in the first reading, a declared
 * one alike in both (see fieldText). Its text parts go to `fields`; errors and limits are the
 * first reading's to report. Throws as busboy does for a body without a boundary.
 */
function latin1Reading(request: Request, fields: Record<string, unknown>, limits: busboy.Limits): busboy.Busboy {
  const reader = busboy({ headers: request.headers, defCharset: 'latin1', limits });
  reader.on('file', (_name: string | undefined, stream) => {
    stream.on('error', () => undefined);
    stream.resume();
  });
  reader.on('field', (name: string | undefined, value: string | undefined) => {
    const key = name ?? '';
    const previous = fields[key];
    fields[key] = previous === undefined ? value : ([] as unknown[]).concat(previous, value);
  });
  reader.on('error', () => undefined);
  return reader;
}

/** The Content-Transfer-Encodings that leave a part's bytes as they are (RFC 2045 §6.2); busboy gives them in lower case, 7bit when none is named. */
const AS_SENT = new Set(['7bit', '8bit', 'binary']);

/**
 * Why a part is refused for its Content-Transfer-Encoding, if it is: the multipart reader
 * decodes none (RFC 7578 §4.7 deprecates them), so a quoted-printable `json` part was stored
 * with its `=3D` escapes as text, and a base64 one was said to be no JSON; such a part is
 * refused, as an upload in a Content-Encoding is, rather than read as other bytes than meant.
 */
function codedPart(name: string, encoding: string): string | undefined {
  const coding = encoding.trim();
  if (coding === '' || AS_SENT.has(coding)) return undefined;
  return `The '${visibleName(name)}' part has Content-Transfer-Encoding '${visibleName(coding)}', which is not decoded: send the part's bytes as they are, with no Content-Transfer-Encoding (or 7bit, 8bit or binary).`;
}

/** Refuses through `fail` each part of the form sent in a Content-Transfer-Encoding (see codedPart). */
function refuseCodedParts(parser: busboy.Busboy, fail: (message: string) => void): void {
  const check = (name: string | undefined, encoding: string): void => {
    const coded = codedPart(name ?? '', encoding);
    if (coded !== undefined) fail(coded);
  };
  parser.on('file', (name: string | undefined, _stream, info) => check(name, info.encoding));
  parser.on('field', (name: string | undefined, _value, info) => check(name, info.encoding));
}

/** What the multipart reader's error says of the body, in the partner's terms. */
function malformedBecause(error: Error): string {
  if (/part header/i.test(error.message)) return "The multipart body is malformed: a part's headers must be lines such as Content-Disposition and Content-Type, at most 16 KiB in all.";
  if (/unexpected end/i.test(error.message)) return 'The multipart body is malformed: it ends before its closing boundary (CRLF, then -- and the boundary and --).';
  return 'The multipart body is malformed.';
}
