import { Injectable, type CallHandler, type ExecutionContext, type NestInterceptor } from '@nestjs/common';
import busboy from 'busboy';
import type { Request, Response } from 'express';
import type { Observable } from 'rxjs';
import { ValidationProblem } from '../common/problem.js';
import { AppConfig } from '../config/app-config.js';
import { DISH_JSON_PART_MAX_BYTES } from './dto/menu.dto.js';
import type { UploadParts } from './menus.service.js';

/** Room for the json part and the multipart framing on top of the image itself. */
const FORM_OVERHEAD = 256 * 1024;

export interface UploadRequest extends Request {
  uploadParts?: UploadParts;
}

/**
 * Reads the multipart form of POST /menus/dishes while it streams (busboy): at most one
 * image of at most IMAGE_MAX_BYTES is held in memory, and a larger body is refused as soon
 * as the limit is passed, without reading the rest. Parts without a name, or with an empty
 * one, are the image, as the interface shows them.
 */
@Injectable()
export class DishUploadInterceptor implements NestInterceptor {
  private readonly mib: string;

  constructor(private readonly config: AppConfig) {
    this.mib = (config.IMAGE_MAX_BYTES / (1024 * 1024)).toFixed(1);
  }

  async intercept(context: ExecutionContext, next: CallHandler): Promise<Observable<unknown>> {
    const http = context.switchToHttp();
    const request = http.getRequest<UploadRequest>();
    const response = http.getResponse<Response>();
    if (!request.is('multipart/form-data')) {
      throw new ValidationProblem(['The request must be multipart/form-data with an image part and a json part.']);
    }
    const declared = Number(request.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.config.IMAGE_MAX_BYTES + FORM_OVERHEAD) {
      // Refused before reading the body; the connection closes so the client stops sending.
      response.setHeader('Connection', 'close');
      throw new ValidationProblem([`The image must be at most ${this.mib} MiB.`]);
    }
    try {
      request.uploadParts = await this.read(request);
    } catch (error) {
      response.setHeader('Connection', 'close');
      throw error;
    }
    return next.handle();
  }

  private read(request: Request): Promise<UploadParts> {
    return new Promise((resolve, reject) => {
      const parts: UploadParts = { files: [], fields: {} };
      let failed = false;
      let parser: busboy.Busboy;
      const fail = (message: string): void => {
        if (failed) return;
        failed = true;
        request.unpipe(parser);
        request.resume();
        reject(new ValidationProblem([message]));
      };
      try {
        parser = busboy({
          headers: request.headers,
          limits: { fileSize: this.config.IMAGE_MAX_BYTES, files: 3, fields: 4, parts: 6, fieldSize: DISH_JSON_PART_MAX_BYTES, fieldNameSize: 100 },
        });
      } catch {
        reject(new ValidationProblem(['The multipart body is malformed: its boundary is missing.']));
        return;
      }
      parser.on('file', (name: string | undefined, stream, info) => {
        const chunks: Buffer[] = [];
        stream.on('data', (chunk: Buffer) => chunks.push(chunk));
        stream.on('limit', () => fail(`The image must be at most ${this.mib} MiB.`));
        stream.on('end', () => {
          if (!failed) parts.files.push({ fieldname: name ?? '', originalname: info.filename ?? '', buffer: Buffer.concat(chunks) });
        });
      });
      parser.on('field', (name: string | undefined, value: string, info) => {
        if (info.valueTruncated) return fail("The 'json' part is larger than 64 KiB.");
        const key = name ?? '';
        const previous = parts.fields[key];
        parts.fields[key] = previous === undefined ? value : ([] as unknown[]).concat(previous, value);
      });
      parser.on('filesLimit', () => fail('Send one image part only.'));
      parser.on('partsLimit', () => fail('The form has too many parts: send one image part and one json part.'));
      parser.on('fieldsLimit', () => fail('The form has too many fields: send one image part and one json part.'));
      parser.on('error', () => fail('The multipart body is malformed.'));
      parser.on('close', () => {
        if (!failed) resolve(parts);
      });
      request.on('aborted', () => fail('The upload was interrupted.'));
      request.pipe(parser);
    });
  }
}
