import { jest } from '@jest/globals';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { request as httpRequest, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { Menu } from '../../src/menus/entities/menu.entity.js';
import { MenusRepository } from '../../src/menus/menus.repository.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { makeImage, pngOfSize } from '../helpers/images.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { curlUpload, fetchUpload, pythonRequestsAvailable, pythonUpload, type ClientResult, type UploadSpec } from '../helpers/upload-clients.js';

const MiB = 1024 * 1024;
const SLOW = 300_000;

/**
 * An upload over IMAGE_MAX_BYTES (5 MiB here, the default) sent by the clients partners use,
 * each in its own process, to the service listening on a real port: every one of them reads
 * the 413 problem, whether the body is read to its end (8 MiB), cut off at the drain bound
 * (64 MiB) or refused by its declared length before it is sent.
 */
describe(`an upload over the size limit, over a real connection (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let db: DataSource;
  let url: string;
  let port: number;
  let headers: Record<string, string>;
  const storage = mkdtempSync(join(tmpdir(), 'upload-images-'));
  const files = mkdtempSync(join(tmpdir(), 'upload-files-'));
  const image = (mib: number) => join(files, `${mib}mib.png`);
  let followUps = 0;

  beforeAll(async () => {
    t = await startTestApp({ IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: storage });
    await t.app.listen(0, '127.0.0.1');
    port = (t.app.getHttpServer().address() as AddressInfo).port;
    url = `http://127.0.0.1:${port}/menus/dishes?SvcClientId=1001`;
    db = t.app.get(DataSource);
    await seedClients(t);
    const menu = Object.assign(new Menu(), { id: 101, clientId: 1001, name: 'Menu 101', startDate: '2026-01-01', endDate: null });
    await t.app.get(MenusRepository).saveMenus([{ menu, dishes: [] }]);
    const partner: IssuedCredential = await issueCredential(t);
    headers = { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${await tokenFor(t.http, partner)}` };
    // A real PNG of the size, every byte its picture's: an image the service stores whole when it is within the limit.
    for (const mib of [1, 8, 64]) writeFileSync(image(mib), pngOfSize(mib * MiB));
  });
  afterAll(async () => {
    await t.close();
    rmSync(files, { recursive: true, force: true });
    rmSync(storage, { recursive: true, force: true });
  });

  const dish = (code: string) => JSON.stringify({ menuId: 101, code, description: 'Chargrilled halloumi', type: 'Starter' });
  const upload = (mib: number, over: Partial<UploadSpec> = {}): UploadSpec => ({ url, headers, json: dish(`BIG-${mib}`), imageFile: image(mib), ...over });
  const count = async (table: string): Promise<number> =>
    Number((await db.query<{ n: string | number }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);
  const stored = async () => ({ dishes: await count('dishes'), images: await count('dish_images'), files: readdirSync(storage).length });

  /** The head of an upload with the partner's credentials, and `more` header lines. */
  const uploadHead = (more: string): string =>
    'POST /menus/dishes?SvcClientId=1001 HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    Object.entries(headers)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    `Content-Type: multipart/form-data; boundary=b\r\n${more}\r\n`;

  /** Writes `bytes` on a new connection and gives everything that came back until the service closed it. */
  function rawExchange(bytes: Buffer): Promise<string> {
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => chunks.push(chunk));
      socket.on('end', () => resolve(Buffer.concat(chunks).toString('latin1')));
      socket.on('error', reject);
      socket.write(bytes);
    });
  }

  function expectTooLarge(result: ClientResult): void {
    expect(result.error).toBeUndefined();
    expect(result.status).toBe(413);
    expect(result.headers?.['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(result.headers?.connection).toBe('close');
    expect(JSON.parse(result.body ?? '')).toEqual({
      title: 'Payload Too Large',
      status: 413,
      detail: "The request body is larger than the service accepts; see 'errors' for the limit.",
      instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
      errors: ['The image must be at most 5242880 bytes (5 MiB).'],
    });
  }

  /** Nothing of the refused uploads was stored, and a following upload, on a new connection, is. */
  async function expectNothingStoredThenServing(before: Awaited<ReturnType<typeof stored>>): Promise<void> {
    expect(await stored()).toEqual(before);
    const code = `OK-${++followUps}`;
    const [after] = await fetchUpload({ url, headers, json: dish(code), imageFile: image(1) });
    expect(after.error).toBeUndefined();
    expect(after.status).toBe(200);
    expect(JSON.parse(after.body ?? '')).toMatchObject({ data: { dish: { code, image: { contentType: 'image/png', bytes: MiB } } } });
    expect(await stored()).toEqual({ dishes: before.dishes + 1, images: before.images + 1, files: before.files + 1 });
  }

  it.each([
    ['8 MiB with a Content-Length (read to its end)', 8, false],
    ['8 MiB chunked (read to its end)', 8, true],
    ['64 MiB with a Content-Length (refused before it is sent)', 64, false],
    ['64 MiB chunked (cut off at the drain bound)', 64, true],
  ])(
    "answers Node's fetch with a 413 problem naming the limit: %s",
    async (_name, mib, chunked) => {
      const before = await stored();
      const results = await fetchUpload(upload(mib, { chunked, times: 3 }));
      expect(results).toHaveLength(3);
      results.forEach(expectTooLarge);
      await expectNothingStoredThenServing(before);
    },
    SLOW,
  );

  it(
    'answers curl with the 413 problem, for 8 MiB and 64 MiB, with a Content-Length and chunked',
    async () => {
      const before = await stored();
      for (const [mib, chunked] of [
        [8, false],
        [64, false],
        [64, true],
      ] as const) {
        expectTooLarge(await curlUpload(upload(mib, { chunked })));
      }
      await expectNothingStoredThenServing(before);
    },
    SLOW,
  );

  it(
    'answers Python requests with the 413 problem, for 8 MiB and 64 MiB',
    async () => {
      expect(await pythonRequestsAvailable()).toBe(true);
      const before = await stored();
      for (const mib of [8, 64]) {
        const results = await pythonUpload(upload(mib, { times: 2 }));
        expect(results).toHaveLength(2);
        results.forEach(expectTooLarge);
      }
      await expectNothingStoredThenServing(before);
    },
    SLOW,
  );

  it('answers a body declared larger than the drain bound at once, before any of it is sent, then closes', async () => {
    const before = await stored();
    // Only the head of the request: the answer must not wait for a body that never comes.
    const answer = await rawExchange(Buffer.from(uploadHead(`Content-Length: ${64 * MiB}\r\n`)));
    const [head, body] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    const fields = Object.fromEntries(lines.slice(1).map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]));
    expectTooLarge({ status: Number(lines[0].split(' ')[1]), headers: fields, body });
    await expectNothingStoredThenServing(before);
  });

  it.each([
    ['a text part', '--b\r\nContent-Disposition: form-data; name="json"\r\n\r\n'],
    ['a preamble', 'This is a preamble, which multipart readers skip.\r\n'],
  ])('refuses a body that streams on in %s once it passes the largest form, without waiting for its end', async (_, opening) => {
    const before = await stored();
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const closed = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    socket.on('error', () => undefined);
    const chunk = (data: Buffer): Buffer => Buffer.concat([Buffer.from(`${data.length.toString(16)}\r\n`), data, Buffer.from('\r\n')]);
    socket.write(uploadHead('Transfer-Encoding: chunked\r\n'));
    socket.write(chunk(Buffer.from(opening)));
    // Up to 128 MiB, ever more than any bound of the service, while no answer has come.
    const filler = chunk(Buffer.alloc(256 * 1024, 'x'));
    let sent = 0;
    while (chunks.length === 0 && !socket.destroyed && sent < 128 * MiB) {
      if (!socket.write(filler)) await new Promise((resolve) => socket.once('drain', resolve).once('close', resolve));
      sent += filler.length;
    }
    socket.end();
    await closed;
    const answer = Buffer.concat(chunks).toString('latin1');
    const [head, body] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 413 Payload Too Large');
    expect(lines).toContain('Connection: close');
    expect(JSON.parse(body)).toMatchObject({
      status: 413,
      errors: ['The form must be at most 5505024 bytes (5.3 MiB): one image part of at most 5 MiB and one json part of at most 64 KiB.'],
    });
    // Answered once the drain bound (four times the largest form) was read, not at the body's end.
    expect(sent).toBeLessThan(64 * MiB);
    await expectNothingStoredThenServing(before);
  });

  it('answers 404 for an image replaced between the read of its row and of its file, as for any id no image has', async () => {
    const post = async (code: string, file: string) => {
      const [result] = await fetchUpload({ url, headers, json: dish(code), imageFile: file });
      expect(result.status).toBe(200);
      return JSON.parse(result.body ?? '') as { data: { dish: { image: { url: string } } } };
    };
    const other = join(files, 'other.png');
    writeFileSync(other, await makeImage('png', 40, 30, '#16a085'));
    const first = await post('SWAP', image(1));
    const repo = t.app.get(MenusRepository);
    const read = repo.readImage.bind(repo);
    // The dish's image is replaced, and its file removed, once the GET has read the image's row.
    const spy = jest.spyOn(repo, 'readImage').mockImplementationOnce(async (row) => {
      await post('SWAP', other);
      return read(row);
    });
    try {
      const res = await fetch(first.data.dish.image.url.replace(t.config.baseUrl, `http://127.0.0.1:${port}`), { headers });
      expect(res.status).toBe(404);
      expect(res.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(await res.json()).toMatchObject({ status: 404, detail: 'No image has this id.' });
      expect(spy).toHaveBeenCalledTimes(1);
    } finally {
      spy.mockRestore();
    }
  });

  /**
   * One upload sent as curl sends a large one, `Expect: 100-continue`: the body goes only once
   * a 100 Continue comes, and is never sent when the final answer comes first.
   */
  function expectingContinue(over: { headers?: Record<string, string>; body: Buffer; declared?: number }): Promise<{
    continued: boolean;
    status: number;
    headers: IncomingHttpHeaders;
    body: string;
  }> {
    return new Promise((resolve, reject) => {
      let continued = false;
      const req = httpRequest(
        {
          host: '127.0.0.1',
          port,
          method: 'POST',
          path: '/menus/dishes?SvcClientId=1001',
          headers: {
            ...(over.headers ?? headers),
            'Content-Type': 'multipart/form-data; boundary=b',
            'Content-Length': String(over.declared ?? over.body.length),
            Expect: '100-continue',
          },
        },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (chunk: Buffer) => chunks.push(chunk));
          res.on('end', () => {
            req.destroy();
            resolve({ continued, status: res.statusCode!, headers: res.headers, body: Buffer.concat(chunks).toString('utf8') });
          });
        },
      );
      req.on('continue', () => {
        continued = true;
        req.end(over.body);
      });
      req.on('error', reject);
      req.flushHeaders();
    });
  }

  const form = (json: string, image: Buffer): Buffer =>
    Buffer.concat([
      Buffer.from(`--b\r\nContent-Disposition: form-data; name="json"\r\n\r\n${json}\r\n--b\r\nContent-Disposition: form-data; filename="d.png"\r\nContent-Type: image/png\r\n\r\n`),
      image,
      Buffer.from('\r\n--b--\r\n'),
    ]);

  describe('Expect: 100-continue', () => {
    it('asks for the body of an upload that passes the checks, and stores it', async () => {
      const before = await stored();
      const image = pngOfSize(MiB / 4);
      const answer = await expectingContinue({ body: form(dish('CONTINUE-1'), image) });
      expect(answer.continued).toBe(true);
      expect(answer.status).toBe(200);
      expect(JSON.parse(answer.body)).toMatchObject({ data: { dish: { code: 'CONTINUE-1', image: { contentType: 'image/png', bytes: MiB / 4 } } } });
      expect(await stored()).toEqual({ dishes: before.dishes + 1, images: before.images + 1, files: before.files + 1 });
    });

    it('keeps the connection for the next request when the body came without waiting for the 100', async () => {
      // A small body: the whole request arrives in one read, before anything reads the body.
      const body = form(dish('CONTINUE-2'), await makeImage('png'));
      const head = uploadHead(`Content-Length: ${body.length}\r\nExpect: 100-continue\r\n`);
      const answer = await rawExchange(Buffer.concat([Buffer.from(head), body, Buffer.from('GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n')]));
      // Each answer's status line (the second follows the first one's body directly).
      const statuses = [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]).filter((status) => status !== '100');
      expect(statuses).toEqual(['200', '200']);
      expect(answer.split('\r\n\r\n')[0]).not.toMatch(/^Connection: close$/im);
    });

    it('refuses a wrong API key without asking for the body, then closes the connection', async () => {
      const before = await stored();
      const answer = await expectingContinue({ headers: { ...headers, 'svc-api-key': 'not-a-key' }, body: Buffer.alloc(0), declared: 4 * MiB });
      expect(answer.continued).toBe(false);
      expect(answer.status).toBe(401);
      expect(answer.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(answer.headers.connection).toBe('close');
      expect(JSON.parse(answer.body)).toMatchObject({ status: 401 });
      expect(await stored()).toEqual(before);
    });

    it('refuses a body declared over the limit at once, without asking for it, then closes the connection', async () => {
      const before = await stored();
      // 8 MiB is within the drain bound: without the expectation, it would be read and dropped first.
      const answer = await expectingContinue({ body: Buffer.alloc(0), declared: 8 * MiB });
      expect(answer.continued).toBe(false);
      expectTooLarge({ status: answer.status, headers: answer.headers as Record<string, string>, body: answer.body });
      await expectNothingStoredThenServing(before);
    });
  });
});
