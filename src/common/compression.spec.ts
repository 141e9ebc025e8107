import { once } from 'node:events';
import type { Server } from 'node:http';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import express, { type Request, type Response } from 'express';
import fc from 'fast-check';
import { COMPRESS_MIN_BYTES, CompressedBodies, closeCompressionWorkers, compress, compressionsUnderWay, compressResponses, negotiate, sendBody } from './compression.js';
import { rawRequest, type RawResponse } from '../../test/helpers/raw-http.js';
import { propertyRuns } from '../../test/helpers/property-runs.js';

describe('negotiate(Accept-Encoding)', () => {
  it.each([
    [undefined, null],
    ['', null],
    ['gzip', 'gzip'],
    ['br', 'br'],
    ['gzip, deflate', 'gzip'],
    ['deflate, compress', null],
    // Equally acceptable: br, which measured smaller and faster.
    ['gzip, br', 'br'],
    ['br;q=0, gzip', 'gzip'],
    ['br;q=0.5, gzip', 'gzip'],
    ['gzip;q=0.5, br;q=0.4', 'gzip'],
    ['gzip;q=0.001', 'gzip'],
    ['br;q=0.000, gzip;q=0', null],
    ['*', 'br'],
    ['*;q=0', null],
    ['*, br;q=0', 'gzip'],
    ['gzip;q=0, *;q=0.2', 'br'],
    // identity: what a client that names it prefers, but a fallback only when not named.
    ['identity', null],
    ['identity, gzip;q=0.5', null],
    ['gzip;q=0.5', 'gzip'],
    ['identity;q=0.5, gzip', 'gzip'],
    ['*;q=0.5, gzip', 'gzip'],
    // Identity refused and nothing else acceptable: identity all the same, not a 406.
    ['identity;q=0', null],
    ['identity;q=0, deflate', null],
    ['identity;q=0, *;q=0', null],
    ['identity;q=0, gzip', 'gzip'],
    // Spelling: case, spaces, the x-gzip alias, parameters other than q.
    ['GZIP', 'gzip'],
    [' br ; q=1.0 ', 'br'],
    ['br;Q=0.9, gzip;q=0.8', 'br'],
    ['x-gzip', 'gzip'],
    ['gzip;level=1;q=0.5, br;q=0.4', 'gzip'],
    // A malformed weight makes its member count as absent.
    ['br;q=1.5, gzip', 'gzip'],
    ['br;q=abc', null],
    ['br;q=0.0001, gzip;q=0.1', 'gzip'],
    [',, ;q=1, gzip', 'gzip'],
  ])('%p -> %p', (header, expected) => {
    expect(negotiate(header)).toBe(expected);
  });

  it('reads a member with a long run of spaces in linear time', () => {
    // 400,000 spaces with no '=' after them: finding the space before an '=' took over a minute.
    const started = Date.now();
    expect(negotiate(`gzip;q${' '.repeat(400_000)}x, br`)).toBe('br');
    expect(negotiate(`gzip;q${' \t'.repeat(200_000)}=${' '.repeat(200_000)}0.5, br;q=0.4`)).toBe('gzip');
    expect(Date.now() - started).toBeLessThan(10_000);
  });

  it('does not depend on the order of the codings named', () => {
    const weight = fc.constantFrom('', ';q=0', ';q=0.3', ';q=0.5', ';q=1');
    const members = fc.tuple(weight, weight, weight, weight).map(([br, gzip, identity, star]) => [
      `br${br}`,
      `gzip${gzip}`,
      `identity${identity}`,
      `*${star}`,
    ]);
    fc.assert(
      fc.property(members, fc.func(fc.integer()), fc.nat(3), (list, order, drop) => {
        const kept = list.filter((_, i) => i !== drop);
        const shuffled = [...kept].sort((a, b) => order(a) - order(b));
        expect(negotiate(shuffled.join(', '))).toBe(negotiate(kept.join(', ')));
      }),
      propertyRuns(100),
    );
  });
});

const page = Buffer.from(JSON.stringify({ data: Array.from({ length: 400 }, (_, i) => ({ id: i, name: `visit ${i}`, score: i % 97 })) }));

describe('compress', () => {
  it('gives bodies that decode to exactly the bytes given, smaller', async () => {
    const br = await compress(page, 'br');
    const gzip = await compress(page, 'gzip');
    expect(brotliDecompressSync(br).equals(page)).toBe(true);
    expect(gunzipSync(gzip).equals(page)).toBe(true);
    expect(br.length).toBeLessThan(page.length / 4);
    expect(gzip.length).toBeLessThan(page.length / 4);
  });
});

describe('compress, many at once', () => {
  afterAll(() => closeCompressionWorkers());

  it('runs two compressions at a time, the others waiting their turn, and gives each its own bytes', async () => {
    // Bodies of a page's size, each its own (a JSON-like run with its index throughout).
    const bodies = Array.from({ length: 6 }, (_, i) => Buffer.from(JSON.stringify(Array.from({ length: 20_000 }, (_, n) => ({ body: i, n, text: `visit ${n} of ${i}` })))));
    const running = bodies.map((body, i) => compress(body, i % 2 ? 'gzip' : 'br'));
    // The first two are started a few microtasks on (no compression can end before a turn of the event loop).
    for (let tick = 0; tick < 5; tick++) await Promise.resolve();
    expect(compressionsUnderWay()).toEqual({ active: 2, pending: 4 });
    const sent = await Promise.all(running);
    sent.forEach((bytes, i) => expect((i % 2 ? gunzipSync(bytes) : brotliDecompressSync(bytes)).equals(bodies[i])).toBe(true));
    expect(compressionsUnderWay()).toEqual({ active: 0, pending: 0 });
  });
});

describe('CompressedBodies', () => {
  it('compresses a body once per coding, for concurrent and later requests', async () => {
    const bodies = new CompressedBodies(1024 * 1024);
    const [first, second] = await Promise.all([bodies.get('page-1', page, 'br'), bodies.get('page-1', page, 'br')]);
    expect(second).toBe(first);
    expect(await bodies.get('page-1', page, 'br')).toBe(first);
    const gzip = await bodies.get('page-1', page, 'gzip');
    expect(gunzipSync(gzip).equals(page)).toBe(true);
    expect(brotliDecompressSync(first).equals(page)).toBe(true);
  });

  it('keeps nothing with a budget of 0, and still shares a compression under way', async () => {
    const bodies = new CompressedBodies(0);
    const [first, second] = await Promise.all([bodies.get('page-1', page, 'gzip'), bodies.get('page-1', page, 'gzip')]);
    expect(second).toBe(first);
    const later = await bodies.get('page-1', page, 'gzip');
    expect(later).not.toBe(first);
    expect(later.equals(first)).toBe(true);
  });
});

describe('compressResponses and sendBody on an Express app', () => {
  const big = JSON.stringify({ items: Array.from({ length: 200 }, (_, i) => `item ${i}`) });
  const small = JSON.stringify({ status: 401, detail: 'no' });
  let server: Server;
  /** What sendBody said it was sending, per request path. */
  const announced: Buffer[] = [];

  beforeAll(async () => {
    const app = express();
    app.set('etag', false);
    app.use(compressResponses());
    app.get('/json', (_req, res) => res.json(JSON.parse(big)));
    app.get('/small', (_req, res) => res.type('application/problem+json').status(401).send(small));
    app.get('/image', (_req, res) => res.type('image/png').send(Buffer.from(big)));
    app.get('/strong', (_req, res) => res.set('ETag', '"abc"').type('text/plain').send(big));
    app.get('/no-transform', (_req, res) => res.set('Cache-Control', 'no-transform').type('text/plain').send(big));
    app.get('/streamed', (_req, res) => {
      res.type('application/javascript');
      res.write(big.slice(0, 1000));
      res.write(Buffer.from(big.slice(1000, 2000)));
      res.end(big.slice(2000), 'utf8');
    });
    app.get('/sent', (req: Request, res: Response) => {
      res.type('application/json');
      void sendBody(req, res, Buffer.from(big), { sending: (sent) => announced.push(sent) });
    });
    app.get('/compression-fails', (req: Request, res: Response) => {
      res.type('application/json');
      void sendBody(req, res, Buffer.from(big), { compressed: () => Promise.reject(new Error('the compression worker ended (exit code 1)')) });
    });
    server = app.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });
  afterAll(() => new Promise((done) => server.close(done)));

  /** The response as it is on the wire: Node's fetch and supertest would decode it. */
  function get(path: string, acceptEncoding?: string, method = 'GET'): Promise<RawResponse> {
    return rawRequest(server, path, acceptEncoding === undefined ? {} : { 'Accept-Encoding': acceptEncoding }, method);
  }

  function expectCompressed(res: RawResponse, encoding: 'br' | 'gzip', text: string): void {
    expect(res.headers['content-encoding']).toBe(encoding);
    expect(res.headers.vary).toBe('Accept-Encoding');
    expect(res.headers['content-length']).toBe(String(res.body.length));
    expect((encoding === 'br' ? brotliDecompressSync(res.body) : gunzipSync(res.body)).toString()).toBe(text);
  }

  it.each([
    ['br, gzip', 'br'],
    ['gzip', 'gzip'],
  ] as const)('compresses a JSON body over 1 KB for %p, with Vary and the compressed length', async (accept, encoding) => {
    const res = await get('/json', accept);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expectCompressed(res, encoding, big);
  });

  it('sends the body as it is, with its length and Vary, when its compression fails (memory, a worker thread that ended)', async () => {
    const res = await get('/compression-fails', 'br, gzip');
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers.vary).toBe('Accept-Encoding');
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(big)));
    expect(res.body.toString()).toBe(big);
  });

  it('sends the body as it is without Accept-Encoding, with Vary', async () => {
    const res = await get('/json');
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers.vary).toBe('Accept-Encoding');
    expect(res.headers['content-length']).toBe(String(Buffer.byteLength(big)));
    expect(res.body.toString()).toBe(big);
  });

  it('never compresses 1 KB or less, but says it could have', async () => {
    expect(Buffer.byteLength(small)).toBeLessThanOrEqual(COMPRESS_MIN_BYTES);
    const res = await get('/small', 'gzip, br');
    expect(res.status).toBe(401);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers.vary).toBe('Accept-Encoding');
    expect(res.body.toString()).toBe(small);
  });

  it.each(['/image', '/no-transform'])('leaves %s alone: compressed already, or not to be transformed', async (path) => {
    const res = await get(path, 'gzip, br');
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBeUndefined();
    expect(res.headers.vary).toBeUndefined();
    expect(res.body.toString()).toBe(big);
  });

  it('weakens a strong ETag on a compressed body only', async () => {
    const compressed = await get('/strong', 'gzip');
    expectCompressed(compressed, 'gzip', big);
    expect(compressed.headers.etag).toBe('W/"abc"');
    const plain = await get('/strong');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.etag).toBe('"abc"');
  });

  it('compresses a body written in pieces as a whole', async () => {
    expectCompressed(await get('/streamed', 'br'), 'br', big);
  });

  it("answers HEAD with its GET's coding and no Content-Length (compressing nothing), or the identity length", async () => {
    const res = await get('/json', 'gzip, br', 'HEAD');
    expect(res.status).toBe(200);
    expect(res.headers['content-encoding']).toBe('br');
    expect(res.headers['content-length']).toBeUndefined();
    expect(res.headers.vary).toBe('Accept-Encoding');
    expect(res.body.length).toBe(0);
    const plain = await get('/json', undefined, 'HEAD');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers['content-length']).toBe(String(Buffer.byteLength(big)));
  });

  it('compresses what sendBody sends once, not again in the middleware, and not for HEAD', async () => {
    announced.length = 0;
    const gzipped = await get('/sent', 'gzip');
    expectCompressed(gzipped, 'gzip', big);
    // The bytes announced are the ones on the wire: the compressed form here, the body itself below.
    expect(announced).toHaveLength(1);
    expect(announced[0].equals(gzipped.body)).toBe(true);
    expectCompressed(await get('/sent', 'br;q=0.9, gzip;q=0.1'), 'br', big);
    const plain = await get('/sent', 'identity');
    expect(plain.headers['content-encoding']).toBeUndefined();
    expect(plain.headers.vary).toBe('Accept-Encoding');
    expect(plain.body.toString()).toBe(big);
    expect(announced.at(-1)!.toString()).toBe(big);
    announced.length = 0;
    const head = await get('/sent', 'gzip', 'HEAD');
    expect(head.headers['content-encoding']).toBe('gzip');
    expect(head.headers.vary).toBe('Accept-Encoding');
    expect(head.headers['content-length']).toBeUndefined();
    expect(head.body.length).toBe(0);
    expect(announced).toHaveLength(0);
  });
});
