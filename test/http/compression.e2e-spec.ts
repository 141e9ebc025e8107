import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { addDays } from '../../src/common/clock.js';
import { COMPRESS_MIN_BYTES } from '../../src/common/compression.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { CompressedPages } from '../../src/visits/compressed-pages.js';
import type { TestApp } from '../helpers/test-app.js';
import { importBranches, startVisitsApp } from '../helpers/visits-fixture.js';
import { rawRequest, type RawResponse } from '../helpers/raw-http.js';

const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM = 'application/problem+json; charset=utf-8';

/** The body as the client decodes it, by its Content-Encoding. */
function decoded(res: RawResponse): Buffer {
  const encoding = res.headers['content-encoding'];
  if (encoding === 'br') return brotliDecompressSync(res.body);
  return encoding === 'gzip' ? gunzipSync(res.body) : res.body;
}

describe(`compressed responses (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let today: string;
  let credential: Record<string, string>;

  beforeAll(async () => {
    const started = await startVisitsApp();
    ({ t, today } = started);
    credential = { 'svc-api-key': started.partner.apiKey, Authorization: `Bearer ${started.token}` };
    // Enough branches that GET /branches is over 1 KB.
    const file = join(mkdtempSync(join(tmpdir(), 'compression-')), 'branches.json');
    writeFileSync(file, JSON.stringify(Array.from({ length: 40 }, (_, i) => ({ id: `C-${i}`, name: `Branch ${i}`, branchCode: `CODE-${i}` }))));
    await importBranches(t, 1001, file);
    await t.app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await t.close();
  });

  function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<RawResponse> {
    return rawRequest(t.app.getHttpServer(), path, headers, method);
  }
  const authed = (path: string, headers: Record<string, string> = {}, method = 'GET') => get(path, { ...credential, ...headers }, method);

  /** Status, type, Vary, and a Content-Length that is the length of the bytes sent. */
  function expectSent(res: RawResponse, status: number, type: string, encoding: string | undefined): void {
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe(type);
    expect(res.headers['content-encoding']).toBe(encoding);
    expect(res.headers.vary).toMatch(/(^|, *)Accept-Encoding($|,)/);
    expect(res.headers['content-length']).toBe(String(res.body.length));
  }

  /** The 93 visits of client 1001 in the longest range, on one page. */
  const visitsPage = (variant = 'standard') =>
    `/visits/${variant}?SvcClientId=1001&FromDate=${addDays(today, -31)}&ToDate=${addDays(today, -1)}&Skip=0&Take=1000`;

  describe('visit pages', () => {
    it.each(['standard', 'plus'])('send /visits/%s in br or gzip, decoding to exactly the bytes of the uncompressed page', async (variant) => {
      const plain = await authed(visitsPage(variant));
      expectSent(plain, 200, JSON_TYPE, undefined);
      expect(plain.body.length).toBeGreaterThan(COMPRESS_MIN_BYTES);
      expect((JSON.parse(plain.body.toString()) as { data: { visits: unknown[] } }).data.visits).toHaveLength(93);
      for (const [accept, encoding] of [
        ['gzip', 'gzip'],
        ['br', 'br'],
        ['gzip, deflate, br', 'br'],
        ['br;q=0.5, gzip', 'gzip'],
      ]) {
        // Twice: the second comes from the compressed forms kept for the page.
        for (const _ of [1, 2]) {
          const res = await authed(visitsPage(variant), { 'Accept-Encoding': accept });
          expectSent(res, 200, JSON_TYPE, encoding);
          expect(res.body.length).toBeLessThan(plain.body.length / 4);
          expect(decoded(res).equals(plain.body)).toBe(true);
          // The weak ETag is the page's, whatever the coding.
          expect(res.headers.etag).toBe(plain.headers.etag);
          expect(res.headers['cache-control']).toBe('private, no-cache');
        }
      }
    });

    it('keep the compressed forms of a page, so a repeated page costs no compression', async () => {
      const res = await authed(visitsPage(), { 'Accept-Encoding': 'br' });
      expectSent(res, 200, JSON_TYPE, 'br');
      // Asked for the same page (its ETag) with other bytes, the kept form comes back.
      const kept = await t.app.get(CompressedPages).get(res.headers.etag!, Buffer.from('not this page'), 'br');
      expect(kept.equals(res.body)).toBe(true);
    });

    it('report the bytes the page cache keeps, plain and compressed, on the metrics', async () => {
      const gauge = async (form: string): Promise<number> => {
        const metrics = await t.app.get(MetricsService).registry.metrics();
        return Number(new RegExp(`^results_visit_page_cache_bytes\\{form="${form}"\\} (\\d+)$`, 'm').exec(metrics)?.[1]);
      };
      const before = [await gauge('plain'), await gauge('compressed')];
      // A page no test asked for before: its plain and compressed forms are kept once each.
      const page = visitsPage().replace('Take=1000', 'Take=999');
      const plain = await authed(page);
      const br = await authed(page, { 'Accept-Encoding': 'br' });
      await authed(page, { 'Accept-Encoding': 'br' });
      expect([plain.status, br.status, br.headers['content-encoding']]).toEqual([200, 200, 'br']);
      expect(await gauge('plain')).toBe(before[0] + plain.body.length);
      expect(await gauge('compressed')).toBe(before[1] + br.body.length);
    });

    it('answer If-None-Match with a 304 whatever the coding, with Vary and no body', async () => {
      const { headers } = await authed(visitsPage(), { 'Accept-Encoding': 'gzip' });
      for (const accept of ['gzip', 'br', 'identity']) {
        const res = await authed(visitsPage(), { 'Accept-Encoding': accept, 'If-None-Match': headers.etag! });
        expect(res.status).toBe(304);
        expect(res.headers.etag).toBe(headers.etag);
        expect(res.headers.vary).toBe('Accept-Encoding');
        expect(res.headers['content-encoding']).toBeUndefined();
        expect(res.body.length).toBe(0);
      }
    });

    it('send the change feed compressed', async () => {
      const path = `/visits/plus/changes?SvcClientId=1001&Since=${new Date(Date.now() - 3600_000).toISOString()}&Take=100`;
      const plain = await authed(path);
      expectSent(plain, 200, JSON_TYPE, undefined);
      const res = await authed(path, { 'Accept-Encoding': 'br, gzip' });
      expectSent(res, 200, JSON_TYPE, 'br');
      expect(res.headers['cache-control']).toBe('no-store');
      expect(res.headers.link).toMatch(/^<[^>]+&after=[^>]+>; rel="next"$/);
      const body = JSON.parse(decoded(res).toString()) as { data: { visits: { visitId: number }[] }; paging: { after: string } };
      const expected = JSON.parse(plain.body.toString()) as typeof body;
      expect(body.data.visits).toHaveLength(100);
      expect(body.data.visits).toEqual(expected.data.visits);
      expect(typeof body.paging.after).toBe('string');
    });
  });

  describe('other responses', () => {
    it('compress GET /branches over 1 KB', async () => {
      const plain = await authed('/branches?SvcClientId=1001');
      expectSent(plain, 200, JSON_TYPE, undefined);
      expect(plain.body.length).toBeGreaterThan(COMPRESS_MIN_BYTES);
      const res = await authed('/branches?SvcClientId=1001', { 'Accept-Encoding': 'gzip' });
      expectSent(res, 200, JSON_TYPE, 'gzip');
      expect(decoded(res).equals(plain.body)).toBe(true);
      const branches = JSON.parse(decoded(res).toString()) as { id: string }[];
      expect(branches.map((b) => b.id)).toContain('C-39');
    });

    it('send a small problem (a 401) uncompressed, with Vary', async () => {
      const res = await get(visitsPage(), { 'Accept-Encoding': 'gzip, br' });
      expectSent(res, 401, PROBLEM, undefined);
      expect(res.body.length).toBeLessThanOrEqual(COMPRESS_MIN_BYTES);
      expect((JSON.parse(res.body.toString()) as { status: number }).status).toBe(401);
      expect(res.headers['www-authenticate']).toMatch(/^ApiKey /);
    });

    it('compress a large problem (a 400 listing every broken rule)', async () => {
      const path = `/visits/standard?SvcClientId=x&FromDate=y&ToDate=z&Skip=-1&Take=0&VisitTypes=${'a'.repeat(900)}`;
      const plain = await authed(path);
      expectSent(plain, 400, PROBLEM, undefined);
      // The message on VisitTypes quotes the 900 characters given.
      expect(plain.body.length).toBeGreaterThan(COMPRESS_MIN_BYTES);
      const res = await authed(path, { 'Accept-Encoding': 'br' });
      expectSent(res, 400, PROBLEM, 'br');
      const body = JSON.parse(decoded(res).toString()) as { errors: string[]; instance: string };
      expect(body.errors).toEqual((JSON.parse(plain.body.toString()) as typeof body).errors);
    });

    it.each([
      ['/docs/openapi.json', 'application/json; charset=utf-8', 'br'],
      ['/docs/swagger-ui-bundle.js', 'text/javascript; charset=utf-8', 'gzip'],
    ])('compress %s', async (path, type, encoding) => {
      const plain = await get(path);
      expectSent(plain, 200, type, undefined);
      const res = await get(path, { 'Accept-Encoding': encoding });
      expectSent(res, 200, type, encoding);
      expect(res.body.length).toBeLessThan(plain.body.length / 2);
      expect(decoded(res).equals(plain.body)).toBe(true);
    });

    it('answer a HEAD with the headers of its GET: the coding, and no Content-Length where the body would be compressed', async () => {
      for (const path of [visitsPage(), '/branches?SvcClientId=1001']) {
        const get = await authed(path, { 'Accept-Encoding': 'gzip' });
        const head = await authed(path, { 'Accept-Encoding': 'gzip' }, 'HEAD');
        expect([head.status, head.body.length]).toEqual([200, 0]);
        expect(head.headers['content-encoding']).toBe('gzip');
        expect(head.headers['content-encoding']).toBe(get.headers['content-encoding']);
        expect(head.headers['content-length']).toBeUndefined();
        expect(head.headers.vary).toBe(get.headers.vary);
        expect(head.headers.etag).toBe(get.headers.etag);
        // Without a coding, the length is the identity body's, as the GET's.
        const plainHead = await authed(path, {}, 'HEAD');
        expect(plainHead.headers['content-encoding']).toBeUndefined();
        expect(plainHead.headers['content-length']).toBe(String((await authed(path)).body.length));
      }
    });

    it("give a Swagger UI file's 304 the Vary of its 200", async () => {
      const first = await get('/docs/swagger-ui-bundle.js', { 'Accept-Encoding': 'gzip' });
      expect(first.headers.vary).toMatch(/Accept-Encoding/);
      const res = await get('/docs/swagger-ui-bundle.js', { 'Accept-Encoding': 'gzip', 'If-None-Match': first.headers.etag! });
      expect(res.status).toBe(304);
      expect(res.headers.vary).toMatch(/(^|, *)Accept-Encoding($|,)/);
      expect(res.body.length).toBe(0);
    });

    it("give a Swagger UI file's 206 the Vary of its 200, and the identity bytes of the range", async () => {
      const plain = await get('/docs/swagger-ui-bundle.js');
      const whole = await get('/docs/swagger-ui-bundle.js', { 'Accept-Encoding': 'gzip' });
      expect(whole.headers['content-encoding']).toBe('gzip');
      for (const headers of [{}, { 'Accept-Encoding': 'gzip' }] as Record<string, string>[]) {
        const res = await get('/docs/swagger-ui-bundle.js', { ...headers, Range: 'bytes=0-99' });
        expect(res.status).toBe(206);
        expect(res.headers['content-type']).toBe('text/javascript; charset=utf-8');
        expect(res.headers['content-encoding']).toBeUndefined();
        expect(res.headers['content-range']).toBe(`bytes 0-99/${plain.body.length}`);
        expect(res.headers['content-length']).toBe('100');
        expect(res.headers.vary).toMatch(/(^|, *)Accept-Encoding($|,)/);
        expect(res.headers['cache-control']).toBe(whole.headers['cache-control']);
        expect(res.headers.etag).toBe(whole.headers.etag);
        expect(res.body.equals(plain.body.subarray(0, 100))).toBe(true);
      }
    });

    it("send a Swagger UI file whole, not a range, when If-Range names its weak ETag (it can never match strongly)", async () => {
      const plain = await get('/docs/swagger-ui-bundle.js');
      const whole = await get('/docs/swagger-ui-bundle.js', { 'Accept-Encoding': 'gzip' });
      const etag = whole.headers.etag!;
      expect(etag).toMatch(/^W\//);
      const res = await get('/docs/swagger-ui-bundle.js', { 'Accept-Encoding': 'gzip', Range: 'bytes=0-99', 'If-Range': etag });
      expect(res.status).toBe(200);
      expect(res.headers['content-range']).toBeUndefined();
      expectSent(res, 200, 'text/javascript; charset=utf-8', 'gzip');
      expect(res.headers.etag).toBe(etag);
      expect(decoded(res).equals(plain.body)).toBe(true);
      // Without If-Range the range is still answered.
      expect((await get('/docs/swagger-ui-bundle.js', { Range: 'bytes=0-99' })).status).toBe(206);
    });

    it('send a Swagger UI file whole when If-Range names a date, which the file server held for any date at or after the file\'s', async () => {
      const plain = await get('/docs/swagger-ui-bundle.js');
      const modified = Date.parse(plain.headers['last-modified']!);
      expect(Number.isNaN(modified)).toBe(false);
      for (const at of [modified + 1000, modified, modified + 86_400_000]) {
        const res = await get('/docs/swagger-ui-bundle.js', { Range: 'bytes=0-99', 'If-Range': new Date(at).toUTCString() });
        expect([at - modified, res.status, res.headers['content-range']]).toEqual([at - modified, 200, undefined]);
        expect(res.body.equals(plain.body)).toBe(true);
      }
    });

    it('send nothing compressed to a client that accepts neither br nor gzip', async () => {
      for (const accept of ['identity', 'deflate', 'br;q=0, gzip;q=0', 'identity;q=0']) {
        const res = await authed('/branches?SvcClientId=1001', { 'Accept-Encoding': accept });
        expectSent(res, 200, JSON_TYPE, undefined);
        expect((JSON.parse(res.body.toString()) as unknown[]).length).toBe(42);
      }
    });
  });
});
