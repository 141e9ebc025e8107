import type { IncomingMessage, ServerResponse } from 'node:http';
import { promisify } from 'node:util';
import { brotliCompress, constants, gzip } from 'node:zlib';
import pLimit from 'p-limit';
import type { NextFunction, Request, Response } from 'express';
import { LRUCache } from 'lru-cache';
import { lookup as lookupType } from 'mime-types';
import vary from 'vary';
import { CompressionWorkers } from './compression-workers.js';

/** The content codings the service compresses with (RFC 9110 §8.4.1). */
export type Encoding = 'br' | 'gzip';

/** Bodies of this many bytes or fewer are sent as they are: compressing them saves nothing worth a round trip to the threadpool. */
export const COMPRESS_MIN_BYTES = 1024;

/**
 * Levels chosen by measurement on 1000-visit pages (docs/decisions.md, "Compression"): brotli
 * quality 4 made the bench's 4.2 MB page 27 times smaller in a third of the time quality 5
 * took (a page that is not cached is compressed for every request, so the time counts more
 * than the last 30% of size), and both beat gzip in size and time, so brotli is preferred
 * whenever a client accepts both equally (`br, gzip`, `*`). Gzip level 6 is the knee of its
 * curve: level 4 is a third larger, level 9 takes 1.85 times as long for 6% less.
 */
const BROTLI_QUALITY = 4;
const GZIP_LEVEL = 6;
/** The codings in order of preference when a client accepts several equally. */
const PREFERENCE: readonly Encoding[] = ['br', 'gzip'];

const brotliAsync = promisify(brotliCompress);
const gzipAsync = promisify(gzip);

/** A member's weight `q=`: a qvalue (0 to 1, at most three decimals) or, when malformed, undefined. */
function weightOf(params: string[]): number | undefined {
  const q = params.find((p) => p.startsWith('q='));
  if (q === undefined) return 1;
  return /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/.test(q.slice(2)) ? Number(q.slice(2)) : undefined;
}

/**
 * A member's part without the space around its first `=` (`q = 0.5` is `q=0.5`). Found with
 * indexOf: a regular expression for the space before it is tried again at each character of a
 * run of spaces, which a header of 16 KiB of spaces made cost 100 ms of CPU.
 */
function closedAroundEquals(part: string): string {
  const at = part.indexOf('=');
  return at < 0 ? part : `${part.slice(0, at).trimEnd()}=${part.slice(at + 1).trimStart()}`;
}

/** The weight of each coding an Accept-Encoding value names; `x-gzip` is gzip (RFC 9110 §8.4.1.3). */
function weights(header: string): Map<string, number> {
  const found = new Map<string, number>();
  for (const member of header.split(',')) {
    const [name = '', ...params] = member.split(';').map((part) => closedAroundEquals(part.trim().toLowerCase()));
    const coding = name === 'x-gzip' ? 'gzip' : name;
    const weight = weightOf(params);
    // A malformed member is ignored, as if it were not there; the first mention of a coding counts.
    if (coding !== '' && weight !== undefined && !found.has(coding)) found.set(coding, weight);
  }
  return found;
}

/**
 * The coding to send a body in, from the request's Accept-Encoding (RFC 9110 §12.5.3): the
 * acceptable coding (q above 0, named or through `*`) with the highest weight, br before gzip
 * on a tie. Null means identity, the body as it is: when the header is absent or empty (the
 * service then assumes a client that decodes nothing), when nothing it accepts is br or gzip,
 * or when it weighs identity higher (`identity, gzip;q=0.5`). A client that refuses identity
 * (`identity;q=0`) and accepts neither br nor gzip still gets identity rather than a 406: a
 * body it may not decode is more useful to it than none.
 */
export function negotiate(header: string | undefined): Encoding | null {
  if (!header) return null;
  const named = weights(header);
  const wildcard = named.get('*');
  let best: Encoding | null = null;
  let bestWeight = 0;
  for (const coding of PREFERENCE) {
    const weight = named.get(coding) ?? wildcard ?? 0;
    if (weight > bestWeight) [best, bestWeight] = [coding, weight];
  }
  // Identity not named (nor `*`) is the fallback only: it never outweighs an accepted coding.
  const identity = named.get('identity') ?? wildcard ?? 0;
  return bestWeight >= identity ? best : null;
}

/**
 * Compressions run at once, the others waiting their turn. Every compressor's memory (brotli's
 * window and hash tables, kept by the malloc arena of the thread that runs it) counts against
 * no budget, unlike the bodies (PAGES_IN_FLIGHT_MB): with as many as libuv's threadpool runs
 * (4), 50 connections asking for br-coded pages the cache did not hold peaked at 366 MB; with 2,
 * 279-289 MB (3: 296-299), for 10% fewer such pages a second on two cores (README
 * "Performance", Memory).
 */
const COMPRESSIONS_AT_ONCE = 2;
const compressions = pLimit(COMPRESSIONS_AT_ONCE);

/**
 * Bodies this large or larger are compressed in br by a worker thread (see CompressionWorkers):
 * brotli's memory for them (megabytes), reported to the service's heap, ran full collections of
 * it. A smaller body, and gzip's (whose compressor takes some 256 KB), is compressed in libuv's
 * threadpool: a round trip to a worker, and its copy of the body, would cost more.
 */
const WORKER_MIN_BYTES = 256 * 1024;
const workers = new CompressionWorkers(COMPRESSIONS_AT_ONCE);

/** The body in `encoding`, compressed off the event loop (COMPRESSIONS_AT_ONCE at a time): a large one in br by a worker thread, else in libuv's threadpool. */
export function compress(body: Buffer, encoding: Encoding): Promise<Buffer> {
  return compressions(() => {
    if (encoding === 'gzip') return gzipAsync(body, { level: GZIP_LEVEL });
    if (body.length >= WORKER_MIN_BYTES) return workers.brotli(body, BROTLI_QUALITY);
    return brotliAsync(body, { params: { [constants.BROTLI_PARAM_QUALITY]: BROTLI_QUALITY, [constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
  });
}

/** Lets go of what the compression workers keep for their next job (see CompressionWorkers.letGo): the bytes let go. */
export const letGoOfCompressionBuffers = (): number => workers.letGo();

/** Ends the compression workers (for tests: the service's end with the process; a later compression starts them again). */
export const closeCompressionWorkers = (): Promise<void> => workers.close();

/** How many compressions run now and wait their turn (for tests). */
export const compressionsUnderWay = (): { active: number; pending: number } => ({ active: compressions.activeCount, pending: compressions.pendingCount });

/**
 * Compressed forms of bodies that are asked for again, such as rendered visit pages: kept in
 * an LRU of `maxBytes` (none when 0) under the body's key and the coding, so a repeated page
 * costs no compression; concurrent requests for one body and coding share one compression.
 */
export class CompressedBodies {
  private readonly cache: LRUCache<string, Buffer> | null;
  private readonly running = new Map<string, Promise<Buffer>>();

  constructor(maxBytes: number) {
    this.cache =
      maxBytes > 0 ? new LRUCache({ maxSize: maxBytes, maxEntrySize: maxBytes / 4, sizeCalculation: (body: Buffer) => body.length }) : null;
  }

  /** The bytes of the compressed bodies kept. */
  get bytes(): number {
    return this.cache?.calculatedSize ?? 0;
  }

  /** `body` (which `key` names exactly) in `encoding`. */
  async get(key: string, body: Buffer, encoding: Encoding): Promise<Buffer> {
    const entry = `${encoding} ${key}`;
    const cached = this.cache?.get(entry);
    if (cached) return cached;
    let running = this.running.get(entry);
    if (!running) {
      running = compress(body, encoding).finally(() => this.running.delete(entry));
      this.running.set(entry, running);
    }
    const compressed = await running;
    this.cache?.set(entry, compressed);
    return compressed;
  }
}

/** Responses whose body `sendBody` encodes itself: `compressResponses` passes them through. */
const encodedBySender = new WeakSet<ServerResponse>();

/** What `sendBody` needs besides the body. */
export interface SendBodyOptions {
  /** The body in a coding, e.g. from CompressedBodies; by default it is compressed for this response. */
  compressed?: (encoding: Encoding) => Promise<Buffer>;
  /** Told the bytes that go out (the body, or its compressed form) just before they are written. */
  sending?: (sent: Buffer) => void;
}

/** A strong ETag names the exact bytes of the identity body: on an encoded one it is weakened (RFC 9110 §8.8.1). */
function weakenEtag(res: ServerResponse): void {
  const etag = res.getHeader('ETag');
  if (typeof etag === 'string' && !etag.startsWith('W/')) res.setHeader('ETag', `W/${etag}`);
}

/**
 * Ends a HEAD answer whose GET would send its body in `encoding`: with the Content-Encoding
 * the GET would have and no Content-Length, since the compressed length is known only once
 * the body is compressed, which a HEAD is not worth (RFC 9110 §9.3.2 and §8.6: a length
 * sent must be the GET's). The ETag is weakened as on the compressed GET.
 */
function endHeadEncoded(res: ServerResponse, encoding: Encoding, end: () => void): void {
  weakenEtag(res);
  res.removeHeader('Content-Length');
  res.setHeader('Content-Encoding', encoding);
  end();
}

/**
 * Ends a response (status, type and validators set by the caller) with `body` in the coding
 * the request accepts best, with its Content-Encoding and Content-Length, and
 * `Vary: Accept-Encoding` whichever coding is sent. Bodies of COMPRESS_MIN_BYTES or fewer are
 * sent as they are; a HEAD gets the headers of the GET (see endHeadEncoded).
 */
export async function sendBody(req: IncomingMessage, res: ServerResponse, body: Buffer, options: SendBodyOptions = {}): Promise<void> {
  encodedBySender.add(res);
  vary(res, 'Accept-Encoding');
  const encoding = body.length <= COMPRESS_MIN_BYTES ? null : negotiate(req.headers['accept-encoding']);
  const identity = (): void => {
    res.setHeader('Content-Length', body.length);
    options.sending?.(body);
    res.end(body);
  };
  if (encoding === null) return identity();
  if (req.method === 'HEAD') return endHeadEncoded(res, encoding, () => res.end());
  // A compression that failed (memory, a worker thread that ended) sends the body as it is.
  const sent = await (options.compressed ?? ((coding: Encoding) => compress(body, coding)))(encoding).catch(() => null);
  if (sent === null) return identity();
  res.setHeader('Content-Encoding', encoding);
  res.setHeader('Content-Length', sent.length);
  options.sending?.(sent);
  res.end(sent);
}

/**
 * Types worth compressing: JSON (problem+json too), text, JavaScript, YAML, XML and SVG. Images
 * such as JPEG, PNG and WebP are compressed already and are never compressed again.
 */
const COMPRESSIBLE = /^\s*(?:text\/|image\/svg\+xml|application\/(?:json|[\w.-]+\+json|javascript|(?:x-)?yaml|xml)\s*(?:;|$))/i;

/** Whether a response's body could be sent compressed, before its size and the request's Accept-Encoding are looked at. */
function couldCompress(res: Response): boolean {
  const status = res.statusCode;
  if (status < 200 || status === 204 || status === 206 || status === 304) return false;
  if (res.getHeader('Content-Encoding') !== undefined) return false;
  // RFC 9111 §5.2.2.6: an intermediary (which this is, for the handlers) must not transform the content.
  if (/\bno-transform\b/i.test(String(res.getHeader('Cache-Control') ?? ''))) return false;
  return COMPRESSIBLE.test(String(res.getHeader('Content-Type') ?? ''));
}

/** Turns the overloads of write and end (chunk, encoding, callback in any combination) into a buffer and a callback. */
function chunkOf(chunk: unknown, encoding: unknown): Buffer | null {
  if (chunk === undefined || chunk === null || typeof chunk === 'function') return null;
  if (Buffer.isBuffer(chunk)) return chunk;
  if (typeof chunk === 'string') return Buffer.from(chunk, typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8');
  return Buffer.from(chunk as Uint8Array);
}
function callbackOf(args: unknown[]): (() => void) | undefined {
  return args.find((arg) => typeof arg === 'function') as (() => void) | undefined;
}

/**
 * Sends the collected body of a response, compressed when it could be, is larger than
 * COMPRESS_MIN_BYTES and the request accepts br or gzip. A strong ETag names the exact bytes
 * of the identity body, so on a compressed one it is weakened (RFC 9110 §8.8.1): the
 * handler's If-None-Match check compares weakly (§13.1.2) and still answers 304.
 */
async function finish(req: Request, res: Response, body: Buffer, end: (body: Buffer, done?: () => void) => void, done?: () => void): Promise<void> {
  if (res.headersSent) return end(body, done);
  // A 304 repeats the Vary of the 200 it stands for (RFC 9110 §15.4.5), and so does a 206 (a
  // file server's range of Swagger UI's files, §15.3.7): a part is never compressed, but a cache
  // that keeps it beside the compressed 200 must still know the two answers differ by
  // Accept-Encoding. A 304's Content-Type is gone: the file's name tells the type.
  const standsFor200 = res.statusCode === 304 || res.statusCode === 206;
  if (standsFor200 && COMPRESSIBLE.test(String(res.getHeader('Content-Type') ?? lookupType(req.path) ?? ''))) res.vary('Accept-Encoding');
  if (!couldCompress(res)) return end(body, done);
  res.vary('Accept-Encoding');
  // A HEAD has no body here (Express ends it with none): the GET's would be Content-Length long.
  const length = req.method === 'HEAD' ? Number(res.getHeader('Content-Length') ?? 0) : body.length;
  const encoding = length > COMPRESS_MIN_BYTES ? negotiate(req.headers['accept-encoding']) : null;
  if (encoding === null) return end(body, done);
  if (req.method === 'HEAD') return endHeadEncoded(res, encoding, () => end(body, done));
  const compressed = await compress(body, encoding).catch(() => null);
  // Compressing a buffer fails only when memory runs out: the body then goes as it is.
  if (compressed === null || res.headersSent) return end(body, done);
  weakenEtag(res);
  res.setHeader('Content-Encoding', encoding);
  res.setHeader('Content-Length', compressed.length);
  end(compressed, done);
}

/**
 * Express middleware that compresses every other response on the fly: JSON answers, problem
 * details, the contract and Swagger UI's files. The body is collected and compressed whole
 * when the handler ends it, so it goes out with its Content-Length; the largest such body is
 * Swagger UI's script (about 1.5 MB). A HEAD gets the headers its GET would (endHeadEncoded).
 * The responses sendBody encodes itself (the visit pages) are never compressed twice.
 */
export function compressResponses() {
  return (req: Request, res: Response, next: NextFunction): void => {
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    const chunks: Buffer[] = [];
    // The body is complete once end is called, though it goes out only after its compression.
    let ended = false;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      if (ended) return false;
      if (encodedBySender.has(res) || res.headersSent) {
        // Headers sent by hand (writeHead): what was collected goes first, then the rest as it comes.
        if (chunks.length > 0) write(Buffer.concat(chunks.splice(0)));
        return write(chunk, ...rest);
      }
      const data = chunkOf(chunk, rest[0]);
      if (data) chunks.push(data);
      const done = callbackOf(rest);
      if (done) process.nextTick(done);
      return true;
    }) as Response['write'];
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      if (encodedBySender.has(res)) return end(chunk, ...rest);
      if (ended) return res;
      ended = true;
      const data = chunkOf(chunk, rest[0]);
      if (data) chunks.push(data);
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks);
      finish(req, res, body, (body, done) => end(body, done), callbackOf([chunk, ...rest])).catch((error: Error) =>
        res.destroy(error),
      );
      return res;
    }) as Response['end'];
    next();
  };
}
