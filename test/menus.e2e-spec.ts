import { randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import sharp from 'sharp';
import request from 'supertest';
import { DataSource } from 'typeorm';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays, localDate } from '../src/common/clock.js';
import { DishImage } from '../src/menus/entities/dish-image.entity.js';
import { Menu } from '../src/menus/entities/menu.entity.js';
import { ImageSweeper } from '../src/menus/image-sweep.js';
import { MenusRepository } from '../src/menus/menus.repository.js';
import { issueCredential, seedClients, tokenFor } from './helpers/auth.js';
import { jpegWith, jpegWithLocation, makeImage, pngOfSize, pngWith, webpWith } from './helpers/images.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { withSystemClockOff } from './helpers/system-clock.js';

const PROBLEM = 'application/problem+json; charset=utf-8';

interface DishRecord {
  id: number;
  code: string;
  image: { contentType: string; bytes: number; width: number; height: number; url: string } | null;
  [field: string]: unknown;
}

async function seedMenus(t: TestApp): Promise<void> {
  const today = localDate(t.config.RESULTS_TIMEZONE);
  const repo = t.app.get(MenusRepository);
  const menu = (id: number, clientId: number, endDate: string | null): Menu =>
    Object.assign(new Menu(), { id, clientId, name: `Menu ${id}`, startDate: addDays(today, -100), endDate });
  const dishes = (menuId: number, n: number) =>
    Array.from({ length: n }, (_, i) => ({
      dish: {
        menuId,
        code: `D${menuId}-${i}`,
        description: `Dish ${i}`,
        type: 'Main',
        // Some share an order, some have none and one has the largest there is (still before
        // those without): the keyset must visit each once, in display order.
        order: i % 4 === 3 ? null : i === 4 ? 2147483647 : Math.floor(i / 2),
        expiryDate: null,
        keywords: '["k"]',
      },
      image: null,
    }));
  await repo.saveMenus([
    { menu: menu(101, 1001, null), dishes: dishes(101, 7) },
    { menu: menu(102, 1001, addDays(today, 10)), dishes: dishes(102, 2) },
    { menu: menu(103, 1001, today), dishes: [] },
    { menu: menu(104, 1001, addDays(today, -1)), dishes: [] },
    { menu: menu(105, 1001, null), dishes: [] },
    { menu: menu(201, 1002, null), dishes: dishes(201, 1) },
  ]);
}

/** `image` with `data` inside it where no decoder looks: a JPEG comment, a private PNG chunk, a WebP chunk after the picture. */
function inside(format: 'png' | 'jpeg' | 'webp', image: Buffer, data: Buffer): Buffer {
  if (format === 'jpeg') return jpegWith(image, 0xfe, data);
  return format === 'png' ? pngWith(image, 'htMl', data) : webpWith(image, 'HTML', data);
}

describe(`menus and dishes (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;
  let db: DataSource;

  beforeAll(async () => {
    t = await startTestApp({ MENUS_PAGE_SIZE: '2', IMAGE_MAX_BYTES: String(200 * 1024), IMAGE_MAX_PIXELS: '1000000' });
    await seedClients(t);
    await seedMenus(t);
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
    db = t.app.get(DataSource);
  });
  afterAll(async () => {
    await t.close();
  });

  const auth = <T extends request.Test>(req: T): T => req.set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
  const get = (path: string) => auth(request(t.http).get(path));
  const count = async (table: string): Promise<number> =>
    Number((await db.query<{ n: string | number }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);
  const problem = (res: request.Response) => {
    expect(res.headers['content-type']).toBe(PROBLEM);
    return JSON.parse(res.text) as { status: number; detail: string; errors?: string[] };
  };

  async function allPages<T>(first: string, key: 'menus' | 'dishes'): Promise<{ items: T[]; pages: number }> {
    const items: T[] = [];
    let path: string | null = first;
    let pages = 0;
    while (path) {
      const res = await get(path);
      expect(res.status).toBe(200);
      // Credential-bound data without a validator: no cache keeps it.
      expect(res.headers['cache-control']).toBe('no-store');
      pages++;
      items.push(...(res.body.data[key] as T[]));
      const after = res.body.paging.after as string | undefined;
      if (after) {
        const link = res.headers.link;
        expect(link).toBe(`<${t.config.baseUrl}${first}&after=${encodeURIComponent(after)}>; rel="next"`);
        path = `${first}&after=${encodeURIComponent(after)}`;
      } else {
        expect(res.headers.link).toBeUndefined();
        expect(res.body.paging).toEqual({});
        path = null;
      }
    }
    return { items, pages };
  }

  describe('GET /menus', () => {
    it("pages through the client's active menus, each exactly once", async () => {
      const { items, pages } = await allPages<{ id: number }>('/menus?SvcClientId=1001', 'menus');
      expect(items.map((m) => m.id)).toEqual([101, 102, 103, 105]);
      expect(pages).toBe(2);
      expect(items[0]).toEqual({ id: 101, name: 'Menu 101', startDate: expect.any(String), endDate: null });
    });

    it('refuses a tampered, foreign or malformed page token with 400', async () => {
      const first = await get('/menus?SvcClientId=1001');
      const after = first.body.paging.after as string;
      const [body, sig] = after.split('.');
      const forged = Buffer.from(JSON.stringify({ s: 'menus:1001', p: [0] })).toString('base64url');
      // The first character carries six whole bits of the signature: another one always changes it.
      const tampered = `${sig.startsWith('A') ? 'B' : 'A'}${sig.slice(1)}`;
      const cases: [string, string][] = [
        [`/menus?SvcClientId=1001&after=${body}.${tampered}`, "'after' is not a valid page token."],
        [`/menus?SvcClientId=1001&after=${forged}.${sig}`, "'after' is not a valid page token."],
        ['/menus?SvcClientId=1001&after=garbage', "'after' is not a valid page token."],
      ];
      const dishesPage = await get('/menus/dishes?SvcClientId=1001&menuId=101');
      cases.push([`/menus?SvcClientId=1001&after=${encodeURIComponent(dishesPage.body.paging.after as string)}`, "'after' is a page token of another query."]);
      for (const [path, message] of cases) {
        const res = await get(path);
        expect(res.status).toBe(400);
        expect(problem(res).errors).toEqual([message]);
      }
    });

    it('weighs the token with the query\'s other rules, before the entitlements', async () => {
      const broken = await get('/menus?SvcClientId=0&after=garbage');
      expect(broken.status).toBe(400);
      expect(problem(broken).errors).toEqual(["'SvcClientId' must be greater than '0'.", "'after' is not a valid page token."]);
      // 1002 is a client the partner does not serve: a broken query is a 400 all the same, as without a token.
      const unentitled = await get('/menus?SvcClientId=1002&after=garbage');
      expect(unentitled.status).toBe(400);
      expect(problem(unentitled).errors).toEqual(["'after' is not a valid page token."]);
      const missingMenu = await get('/menus/dishes?SvcClientId=1001&menuId=999&after=garbage');
      expect(missingMenu.status).toBe(400);
      expect(problem(missingMenu).errors).toEqual(["'after' is not a valid page token."]);
    });
  });

  describe('GET /menus/dishes', () => {
    it('pages through the dishes of a menu by display order, each exactly once', async () => {
      const { items, pages } = await allPages<DishRecord>('/menus/dishes?SvcClientId=1001&menuId=101', 'dishes');
      expect(items).toHaveLength(7);
      expect(new Set(items.map((d) => d.code)).size).toBe(7);
      expect(pages).toBe(4);
      const orders = items.map((d) => (d.order as number | null) ?? Infinity);
      expect(orders).toEqual([...orders].sort((a, b) => a - b));
      expect(items[0]).toEqual({
        id: expect.any(Number),
        menuId: 101,
        code: 'D101-0',
        description: 'Dish 0',
        type: 'Main',
        order: 0,
        expiryDate: null,
        keywords: ['k'],
        image: null,
      });
    });

    it("refuses a token of another menu's pages with 400", async () => {
      const other = await get('/menus/dishes?SvcClientId=1001&menuId=101');
      const res = await get(`/menus/dishes?SvcClientId=1001&menuId=102&after=${encodeURIComponent(other.body.paging.after as string)}`);
      expect(res.status).toBe(400);
      expect(problem(res).errors).toEqual(["'after' is a page token of another query."]);
    });

    it("answers a menu of another client and a menu id no menu has alike, 403: the answer tells nothing of other clients' menus", async () => {
      const missing = await get('/menus/dishes?SvcClientId=1001&menuId=999');
      const foreign = await get('/menus/dishes?SvcClientId=1001&menuId=201');
      for (const [res, menuId] of [[missing, 999], [foreign, 201]] as const) {
        expect(res.status).toBe(403);
        expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(problem(res)).toEqual({ title: 'Forbidden', status: 403, detail: `Menu ${menuId} is not a menu of SvcClientId 1001.`, instance: expect.stringMatching(/^urn:svc:api:results:error:/) });
      }
      expect(Object.keys(missing.headers).sort()).toEqual(Object.keys(foreign.headers).sort());
    });

    it('validates its parameters', async () => {
      const res = await get('/menus/dishes?svcclientid=1001&MENUID=x');
      expect(res.status).toBe(400);
      expect(problem(res).errors).toEqual(["'menuId' must be an integer: 'x'."]);
      // Ids are 32-bit integers: a larger one is a 400, not a database error.
      const large = await get('/menus/dishes?SvcClientId=1001&menuId=3000000000');
      expect(large.status).toBe(400);
      expect(problem(large).errors).toEqual(["'menuId' must be less than or equal to '2147483647'."]);
    });
  });

  describe('POST /menus/dishes', () => {
    const dish = (over: Record<string, unknown> = {}) =>
      JSON.stringify({ menuId: 102, code: 'NEW-1', description: 'Chargrilled halloumi', type: 'Starter', order: 3, expiryDate: '2026-12-31', keywords: ['vegetarian'], ...over });
    const post = (build: (req: request.Test) => request.Test) => build(auth(request(t.http).post('/menus/dishes?SvcClientId=1001')));
    const postTo = (query: string, build: (req: request.Test) => request.Test) => build(auth(request(t.http).post(`/menus/dishes?${query}`)));

    it("lists the query's broken rules with the form's in one 400, and weighs the entitlements after both", async () => {
      const image = await makeImage('png', 20, 20);
      const both = await postTo('SvcClientId=abc', (r) => r.attach('', image, 'a.png').field('json', JSON.stringify({ menuId: 'x', code: 'Q', description: 'd', type: 'Main' })));
      expect(both.status).toBe(400);
      expect(problem(both).errors).toEqual(["'SvcClientId' must be an integer: 'abc'.", "'menuId' must be an integer: 'x'."]);
      const malformed = await postTo('SvcClientId=abc', (r) => r.set('Content-Type', 'multipart/form-data; boundary=QQ').send('garbage'));
      expect(malformed.status).toBe(400);
      expect(problem(malformed).errors).toEqual(["'SvcClientId' must be an integer: 'abc'.", 'The multipart body is malformed: it ends before its closing boundary (CRLF, then -- and the boundary and --).']);
      const utf16 = await post((r) =>
        r.set('Content-Type', 'multipart/form-data; boundary=QQ').send(
          '--QQ\r\nContent-Disposition: form-data; name="json"\r\nContent-Type: application/json; charset=utf-16\r\n\r\n{}\r\n--QQ--\r\n',
        ),
      );
      expect(problem(utf16).errors).toEqual(["The 'json' part is in a charset the service cannot read: send it as UTF-8."]);
      const notMultipart = await postTo('SvcClientId=0', (r) => r.send({ menuId: 102 }));
      expect(problem(notMultipart).errors).toEqual([
        "'SvcClientId' must be greater than '0'.",
        'The request must be multipart/form-data with an image part and a json part.',
      ]);
      // 1002 is a client the partner does not serve: a broken form is a 400 all the same, a valid one a 403.
      const brokenForm = await postTo('SvcClientId=1002', (r) => r.attach('', image, 'a.png').field('json', '{not json'));
      expect(brokenForm.status).toBe(400);
      expect(problem(brokenForm).errors).toEqual(["The 'json' part is not valid JSON."]);
      const validForm = await postTo('SvcClientId=1002', (r) => r.attach('', image, 'a.png').field('json', dish({ code: 'ELSEWHERE' })));
      expect(validForm.status).toBe(403);
      expect(problem(validForm).detail).toBe('The credential is not entitled to SvcClientId 1002.');
    });

    it.each(['jpeg', 'png', 'webp'] as const)('stores a %s image byte for byte and serves it back', async (format) => {
      const bytes = await makeImage(format, 80, 60);
      const res = await post((r) => r.attach('', bytes, `photo.${format}`).field('json', dish({ code: `IMG-${format}` })));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const record = res.body.data.dish as DishRecord;
      expect(record).toEqual({
        id: expect.any(Number),
        menuId: 102,
        code: `IMG-${format}`,
        description: 'Chargrilled halloumi',
        type: 'Starter',
        order: 3,
        expiryDate: '2026-12-31',
        keywords: ['vegetarian'],
        image: {
          contentType: `image/${format}`,
          bytes: bytes.length,
          width: 80,
          height: 60,
          url: expect.stringMatching(new RegExp(`^${t.config.baseUrl}/menus/dishes/images/[0-9a-f-]{36}\\?SvcClientId=1001$`)),
        },
      });
      const image = await auth(request(t.http).get(record.image!.url.slice(t.config.baseUrl.length))).buffer(true);
      expect(image.status).toBe(200);
      expect(image.headers['content-type']).toBe(`image/${format}`);
      expect(image.headers['cache-control']).toBe('private, max-age=31536000, immutable');
      // A browser's cache gives it to the same credentials only.
      expect(image.headers.vary).toBe('Authorization, svc-api-key');
      expect(image.headers.etag).toMatch(/^"[0-9a-f]{64}"$/);
      expect(Buffer.compare(image.body as Buffer, bytes)).toBe(0);
      const again = await auth(request(t.http).get(record.image!.url.slice(t.config.baseUrl.length))).set('If-None-Match', image.headers.etag);
      expect(again.status).toBe(304);
      // The image's ETag is strong: If-Match with it holds, with another tag (or its weak form) it fails.
      const held = await auth(request(t.http).get(record.image!.url.slice(t.config.baseUrl.length))).set('If-Match', image.headers.etag);
      expect(held.status).toBe(200);
      const failed = await auth(request(t.http).get(record.image!.url.slice(t.config.baseUrl.length))).set('If-Match', `W/${image.headers.etag}`);
      expect(failed.status).toBe(412);
      expect(problem(failed)).toEqual({
        title: 'Precondition Failed',
        status: 412,
        detail: 'If-Match names no current representation: none of its entity tags is this one by strong comparison.',
        instance: expect.stringMatching(/^urn:svc:api:results:error:/),
      });
      expect(failed.headers['cache-control']).toBe('no-store');
      // A weak marker in lower case is no entity tag: the field is no list of tags, and fails.
      const malformed = await auth(request(t.http).get(record.image!.url.slice(t.config.baseUrl.length))).set('If-Match', `w/${image.headers.etag}`);
      expect([malformed.status, problem(malformed).detail]).toEqual([412, 'If-Match is neither * nor a list of entity tags ("tag" or W/"tag").']);
      // An If-None-Match that is no list of tags holds none the client could hold: the image itself.
      const unread = await auth(request(t.http).get(record.image!.url.slice(t.config.baseUrl.length))).set('If-None-Match', `x${image.headers.etag}`).buffer(true);
      expect([unread.status, Buffer.compare(unread.body as Buffer, bytes)]).toEqual([200, 0]);
    });

    it("accepts the image in a part named 'file' (as Swagger UI sends it)", async () => {
      const png = await makeImage('png');
      const res = await post((r) => r.attach('file', png, 'dish.png').field('json', dish({ code: 'SWAGGER' })));
      expect(res.status).toBe(200);
    });

    it('removes EXIF metadata, with the location, before the image is stored', async () => {
      const original = await jpegWithLocation();
      expect((await sharp(original).metadata()).exif).toBeDefined();
      const res = await post((r) => r.attach('', original, 'phone.jpg').field('json', dish({ code: 'EXIF' })));
      expect(res.status).toBe(200);
      const url = (res.body.data.dish as DishRecord).image!.url.slice(t.config.baseUrl.length);
      const served = (await auth(request(t.http).get(url)).buffer(true)).body as Buffer;
      const meta = await sharp(served).metadata();
      expect(meta.format).toBe('jpeg');
      expect(meta.exif).toBeUndefined();
      expect([meta.width, meta.height]).toEqual([40, 30]);
    });

    it.each(['png', 'jpeg', 'webp'] as const)('stores a %s without what was appended after its end, and a whole one byte for byte', async (format) => {
      const image = await makeImage(format, 30, 20);
      const served = async (code: string, bytes: Buffer): Promise<Buffer> => {
        const res = await post((r) => r.attach('', bytes, `x.${format}`).field('json', dish({ code })));
        expect(res.status).toBe(200);
        const url = (res.body.data.dish as DishRecord).image!.url.slice(t.config.baseUrl.length);
        return (await auth(request(t.http).get(url)).buffer(true)).body as Buffer;
      };
      const appended = Buffer.from('<html><body><script>alert(document.cookie)</script></body></html>', 'latin1');
      const cleaned = await served(`TAIL-${format}`, Buffer.concat([image, appended]));
      expect(cleaned.includes(appended)).toBe(false);
      const meta = await sharp(cleaned).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual([format, 30, 20]);
      expect((await served(`WHOLE-${format}`, image)).equals(image)).toBe(true);
      // Nor what hides inside it where libvips does not look: a JPEG comment, a private PNG chunk, a WebP chunk its header does not announce.
      const hidden = inside(format, image, appended);
      expect(hidden.includes(appended)).toBe(true);
      const stripped = await served(`INSIDE-${format}`, hidden);
      expect(stripped.includes(appended)).toBe(false);
      expect((await sharp(stripped).metadata()).format).toBe(format);
    });

    it('updates the dish with the same code on that menu, replacing its image', async () => {
      const [png, jpeg] = [await makeImage('png', 10, 10), await makeImage('jpeg', 20, 10)];
      const first = await post((r) => r.attach('', png, 'a.png').field('json', dish({ code: 'UPD' })));
      const images = await count('dish_images');
      const second = await post((r) =>
        r.attach('', jpeg, 'b.jpg').field('json', dish({ code: 'UPD', description: 'Now with chips', order: null, keywords: [] })),
      );
      expect(second.status).toBe(200);
      const [a, b] = [first.body.data.dish as DishRecord, second.body.data.dish as DishRecord];
      expect(b.id).toBe(a.id);
      expect(b).toMatchObject({ description: 'Now with chips', order: null, keywords: [], image: { contentType: 'image/jpeg', width: 20 } });
      expect(await count('dish_images')).toBe(images);
      const old = await auth(request(t.http).get(a.image!.url.slice(t.config.baseUrl.length)));
      expect(old.status).toBe(404);
      // A refusal is not cached as the image is, nor at all: it must not outlive its cause.
      expect(old.headers['cache-control']).toBe('no-store');
      const unnamed = await auth(request(t.http).get(b.image!.url.slice(t.config.baseUrl.length).split('?')[0]));
      expect(unnamed.status).toBe(400);
      expect(unnamed.headers['cache-control']).toBe('no-store');
    });

    it("names the query's client when a credential of two clients asks for one's menu or image under the other", async () => {
      const both = await issueCredential(t, { clients: [1001, 1002] });
      const bearer = await tokenFor(t.http, both);
      const as = <T extends request.Test>(req: T): T => req.set('svc-api-key', both.apiKey).set('Authorization', `Bearer ${bearer}`);
      const upload = await as(request(t.http).post('/menus/dishes?SvcClientId=1001'))
        .attach('', await makeImage('png'), 'a.png')
        .field('json', dish({ code: 'TWO-CLIENTS' }));
      expect(upload.status).toBe(200);
      expect(upload.headers['cache-control']).toBe('no-store');
      const imagePath = (upload.body.data.dish.image.url as string).slice(t.config.baseUrl.length);
      expect((await as(request(t.http).get(imagePath))).status).toBe(200);
      for (const [res, detail] of [
        [await as(request(t.http).get('/menus/dishes?SvcClientId=1001&menuId=201')), 'Menu 201 is not a menu of SvcClientId 1001.'],
        [await as(request(t.http).post('/menus/dishes?SvcClientId=1001')).attach('', await makeImage('png'), 'a.png').field('json', dish({ menuId: 201 })), 'Menu 201 is not a menu of SvcClientId 1001.'],
        [await as(request(t.http).get(imagePath.replace('SvcClientId=1001', 'SvcClientId=1002'))), 'The image is not an image of a dish of SvcClientId 1002.'],
      ] as const) {
        expect({ status: res.status, detail: problem(res).detail }).toEqual({ status: 403, detail });
      }
      // Under its own client, the menu is read.
      expect((await as(request(t.http).get('/menus/dishes?SvcClientId=1002&menuId=201'))).status).toBe(200);
    });

    it('answers an image id that cannot be decoded after the credentials, as any id that is no image', async () => {
      for (const id of ['%zz', '%', '%FF', 'a%2']) {
        const anonymous = await request(t.http).get(`/menus/dishes/images/${id}?SvcClientId=1001`);
        expect({ id, status: anonymous.status }).toEqual({ id, status: 401 });
        expect(anonymous.headers['x-rate-limit-remaining']).toMatch(/^\d+$/);
        const res = await auth(request(t.http).get(`/menus/dishes/images/${id}?SvcClientId=1001`));
        expect({ id, status: res.status, detail: problem(res).detail }).toEqual({ id, status: 404, detail: 'No image has this id.' });
      }
    });

    describe('refuses bad input with a 400 and writes nothing', () => {
      let png: Buffer;
      beforeAll(async () => {
        png = await makeImage('png');
      });

      const cases: [string, (r: request.Test) => request.Test, string[]][] = [
        ['a text file named .png', (r) => r.attach('', Buffer.from('just some text'), 'fake.png').field('json', dish()), ['The image must be a JPEG, PNG or WebP file.']],
        [
          'an SVG',
          (r) => r.attach('', Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"><rect width="10" height="10"/></svg>'), 'x.svg').field('json', dish()),
          ['The image must be a JPEG, PNG or WebP file.'],
        ],
        ['a GIF', (r) => r.attach('', Buffer.from('R0lGODlhAQABAAAAACH5BAEKAAEALAAAAAABAAEAAAICTAEAOw==', 'base64'), 'x.gif').field('json', dish()), ['The image must be a JPEG, PNG or WebP file.']],
        ['an empty image part', (r) => r.attach('', Buffer.alloc(0), 'empty.png').field('json', dish()), ['The image is empty.']],
        ['no image part', (r) => r.field('json', dish()), ["The image part is required: a file part with an empty name or named 'file'."]],
        [
          'an image part without a filename',
          (r) => r.field('', png.toString('latin1')).field('json', dish()),
          ['The image part (\'\') has no filename: send it as a file, with Content-Disposition: form-data; name=""; filename="dish.jpg".'],
        ],
        [
          "an image part named 'file' without a filename",
          (r) => r.field('file', png.toString('latin1')).field('json', dish()),
          ['The image part (\'file\') has no filename: send it as a file, with Content-Disposition: form-data; name="file"; filename="dish.jpg".'],
        ],
        ['two image parts', (r) => r.attach('', png, 'a.png').attach('file', png, 'b.png').field('json', dish()), ['Send one image part only.']],
        ['no json part', (r) => r.attach('', png, 'a.png'), ["The 'json' part is required: the dish as JSON."]],
        ['json that does not parse', (r) => r.attach('', png, 'a.png').field('json', '{"menuId": 102,'), ["The 'json' part is not valid JSON."]],
        ['json that is a list', (r) => r.attach('', png, 'a.png').field('json', '[]'), ["The 'json' part must be a JSON object."]],
        [
          'json that names a key twice',
          (r) => r.attach('', png, 'a.png').field('json', dish().replace('{', '{"menuId": 101, ')),
          ["The 'json' part names 'menuId' more than once."],
        ],
        ['json that is a number', (r) => r.attach('', png, 'a.png').field('json', '7'), ["The 'json' part must be a JSON object."]],
        [
          'numbers given as strings',
          (r) => r.attach('', png, 'a.png').field('json', JSON.stringify({ ...(JSON.parse(dish()) as object), menuId: '102', order: '3' })),
          ["'menuId' must be an integer: '102'.", "'order' must be an integer: '3'."],
        ],
        [
          // JSON.parse reads both as whole numbers (101 and 1): the dish would land on menu 101.
          'numbers that only round to whole ones, and one past every bound',
          (r) => r.attach('', png, 'a.png').field('json', dish().replace('"menuId":102', '"menuId":100.99999999999999999').replace('"order":3', '"order":0.99999999999999999,"x":1e400')),
          ["'menuId' must be an integer: '100.99999999999999999'.", "'order' must be an integer: '0.99999999999999999'."],
        ],
        ['a menu id past every double', (r) => r.attach('', png, 'a.png').field('json', dish().replace('"menuId":102', '"menuId":1e400')), ["'menuId' must be less than or equal to '2147483647'."]],
        [
          'names in another case beside the fields (one would be ignored)',
          (r) => r.attach('', png, 'a.png').field('json', JSON.stringify({ ...(JSON.parse(dish()) as object), Keywords: ['lost'], Order: 3, expirydate: '2027-01-01' })),
          [
            "'Order' and 'order' are both given: field names are case-sensitive; give 'order' only.",
            "'expirydate' and 'expiryDate' are both given: field names are case-sensitive; give 'expiryDate' only.",
            "'Keywords' and 'keywords' are both given: field names are case-sensitive; give 'keywords' only.",
          ],
        ],
        [
          'names in another case than the fields (each would be read as absent)',
          (r) => r.attach('', png, 'a.png').field('json', JSON.stringify({ menuId: 102, code: 'CASE', description: 'd', type: 't', Keywords: ['lost'], ORDER: 3 })),
          ["'ORDER' is not a field: field names are case-sensitive; write 'order'.", "'Keywords' is not a field: field names are case-sensitive; write 'keywords'."],
        ],
        [
          'every broken dish rule',
          (r) =>
            r.attach('', png, 'a.png').field(
              'json',
              JSON.stringify({ menuId: 'x', code: 'c'.repeat(51), description: 'd'.repeat(251), type: '', order: 1.5, expiryDate: '2026-02-30', keywords: ['k'.repeat(51), 7] }),
            ),
          [
            "'menuId' must be an integer: 'x'.",
            "'code' must be at most 50 characters.",
            "'description' must be at most 250 characters.",
            "'type' must not be empty.",
            "'order' must be an integer: '1.5'.",
            "'expiryDate' is not in the expected format yyyy-mm-dd: '2026-02-30'.",
            "'keywords[0]' must be at most 50 characters.",
            "'keywords[1]' must be a non-empty string.",
          ],
        ],
        [
          'keywords no column keeps as given, an expiry date with text after it',
          (r) => r.attach('', png, 'a.png').field('json', dish({ keywords: ['a\u0000b', '\udc00'], expiryDate: '2026-01-01 (anything at all)' })),
          [
            "'expiryDate' is not in the expected format yyyy-mm-dd: '2026-01-01 (anything at all)'.",
            "'keywords[0]' must not contain NUL characters or unpaired UTF-16 surrogates.",
            "'keywords[1]' must not contain NUL characters or unpaired UTF-16 surrogates.",
          ],
        ],
        ['an expiry at hour 24', (r) => r.attach('', png, 'a.png').field('json', dish({ expiryDate: '2026-02-28T24:00:00' })), ["'expiryDate' is not in the expected format yyyy-mm-dd: '2026-02-28T24:00:00'."]],
        [
          'an expiry in the year 0000, which neither database keeps',
          (r) => r.attach('', png, 'a.png').field('json', dish({ expiryDate: '0000-01-01T10:00:00Z' })),
          ["'expiryDate' must be a date in the years 0001 to 9999: '0000-01-01T10:00:00Z'."],
        ],
        ['a menu id past 32 bits', (r) => r.attach('', png, 'a.png').field('json', dish({ menuId: 3000000000 })), ["'menuId' must be less than or equal to '2147483647'."]],
      ];

      it.each(cases)('%s', async (_name, build, errors) => {
        const before = [await count('dishes'), await count('dish_images')];
        const res = await post(build);
        expect(res.status).toBe(400);
        expect(problem(res)).toMatchObject({ title: 'Bad Request', status: 400, errors });
        expect([await count('dishes'), await count('dish_images')]).toEqual(before);
      });

      it('a truncated image of each format', async () => {
        const before = [await count('dishes'), await count('dish_images')];
        for (const format of ['jpeg', 'png', 'webp'] as const) {
          const whole = await makeImage(format, 200, 150, '#8e44ad');
          const res = await post((r) => r.attach('', whole.subarray(0, Math.floor(whole.length * 0.6)), `cut.${format}`).field('json', dish()));
          expect(res.status).toBe(400);
          expect(problem(res).errors).toEqual([expect.stringMatching(/^The image (is truncated or corrupt|must be a JPEG, PNG or WebP file)\.$/)]);
        }
        expect([await count('dishes'), await count('dish_images')]).toEqual(before);
      });

      it('an image over the pixel limit', async () => {
        const huge = await sharp({ create: { width: 1200, height: 1000, channels: 3, background: '#000' } }).png().toBuffer();
        const res = await post((r) => r.attach('', huge, 'huge.png').field('json', dish()));
        expect(res.status).toBe(400);
        expect(problem(res).errors).toEqual(['The image must be at most 1 megapixel.']);
      });

      it('an image whose decoded samples outgrow the pixel limit: 16 bits a sample count twice', async () => {
        // 0.6 megapixels under a limit of 1: taken in 8 bits a sample, refused in 16 (counted as 1.2).
        const pixels = { width: 800, height: 750, channels: 4 as const, background: { r: 10, g: 20, b: 30, alpha: 1 } };
        const deep = await sharp({ create: pixels }).toColourspace('rgb16').png().toBuffer();
        expect((await sharp(deep).metadata()).depth).toBe('ushort');
        const refused = await post((r) => r.attach('', deep, 'deep.png').field('json', dish({ code: 'DEEP-16' })));
        expect(refused.status).toBe(400);
        expect(problem(refused).errors).toEqual(['The image must be at most 1 megapixel; one with 16-bit samples counts twice.']);
        // One channel of 16 bits, as small in memory as 8-bit RGB, counts twice all the same.
        const grey = await sharp({ create: { ...pixels, channels: 3 } }).toColourspace('grey16').png().toBuffer();
        expect((await sharp(grey).metadata()).depth).toBe('ushort');
        const greyRefused = await post((r) => r.attach('', grey, 'grey.png').field('json', dish({ code: 'GREY-16' })));
        expect(problem(greyRefused).errors).toEqual(['The image must be at most 1 megapixel; one with 16-bit samples counts twice.']);
        const shallow = await sharp({ create: pixels }).png().toBuffer();
        expect((await post((r) => r.attach('', shallow, 'shallow.png').field('json', dish({ code: 'DEEP-8' })))).status).toBe(200);
      });

      it('a body that is not multipart', async () => {
        const res = await post((r) => r.send({ menuId: 102 }));
        expect(res.status).toBe(400);
        expect(problem(res).errors).toEqual(['The request must be multipart/form-data with an image part and a json part.']);
      });

      it('a body in a content coding, which would be read as its coded bytes', async () => {
        const png = await makeImage('png', 4, 4);
        for (const coding of ['gzip', 'x-unknown', 'identity, gzip']) {
          const res = await post((r) => r.set('Content-Encoding', coding).attach('', png, 'a.png').field('json', dish({ code: `CODED-${coding}` })));
          expect([coding, res.status, res.headers['content-type'], res.headers['accept-encoding']]).toEqual([coding, 415, 'application/problem+json; charset=utf-8', 'identity']);
          expect(problem(res).detail).toBe(`The upload's Content-Encoding '${coding}' is not read: send the multipart body as it is, with no Content-Encoding.`);
        }
        // identity, and an empty field, which names no coding (as the token form takes it).
        for (const coding of ['identity', '']) {
          const res = await post((r) => r.set('Content-Encoding', coding).attach('', png, 'a.png').field('json', dish({ code: `CODED-${coding || 'none'}` })));
          expect([coding, res.status]).toEqual([coding, 200]);
        }
      });

      it('a part header, or a parameter, given twice: two readers would read the form two ways', async () => {
        const png = await makeImage('png', 4, 4);
        const image = `--B\r\nContent-Disposition: form-data; name=""; filename="a.png"\r\nContent-Type: image/png\r\n\r\n${png.toString('latin1')}\r\n`;
        const json = (head: string) => `--B\r\n${head}\r\n\r\n${dish({ code: 'TWICE' })}\r\n--B--\r\n`;
        const send = (body: string, type = 'multipart/form-data; boundary=B') => post((r) => r.set('Content-Type', type).send(Buffer.from(body, 'latin1')));
        for (const [head, reason] of [
          ['Content-Disposition: form-data; name="json"\r\nContent-Disposition: form-data; name="x"', 'A part of the form has its Content-Disposition header more than once: send each part header once.'],
          ['Content-Disposition: form-data; name="json"\r\nContent-Type: text/plain; charset=utf-16le\r\nContent-Type: text/plain; charset=utf-8', 'A part of the form has its Content-Type header more than once: send each part header once.'],
          ['Content-Disposition: form-data; name="x"; name="json"', "A part of the form names its Content-Disposition parameter 'name' more than once: send each once."],
        ]) {
          const res = await send(image + json(head));
          expect({ head, status: res.status, errors: problem(res).errors }).toEqual({ head, status: 400, errors: [reason] });
        }
        const boundary = await send(image + json('Content-Disposition: form-data; name="json"'), 'multipart/form-data; boundary=B; boundary=C');
        expect([boundary.status, problem(boundary).errors]).toEqual([400, ["The request's Content-Type names its Content-Type parameter 'boundary' more than once: send each once."]]);
        expect(await db.query("SELECT id FROM dishes WHERE code = 'TWICE'")).toEqual([]);
        // The same form with each header once is taken.
        const once = await send(image + json('Content-Disposition: form-data; name="json"\r\nContent-Type: application/json'));
        expect([once.status, once.body.data?.dish?.code, once.status === 200 ? [] : problem(once).errors]).toEqual([200, 'TWICE', []]);
      });

      it('a part in a Content-Transfer-Encoding, which would be stored as its coded bytes', async () => {
        const png = await makeImage('png', 4, 4);
        const part = (head: string, body: string) => `--B\r\n${head}\r\n\r\n${body}\r\n`;
        const image = (coding = '') => part(`Content-Disposition: form-data; name=""; filename="a.png"\r\nContent-Type: image/png${coding}`, png.toString('latin1'));
        const send = (body: string) => post((r) => r.set('Content-Type', 'multipart/form-data; boundary=B').send(Buffer.from(`${body}--B--\r\n`, 'latin1')));
        const quoted = dish({ code: 'CODED-PART', description: 'Halloumi, 2 for 1' }).replace('1"', '=31"');
        for (const [body, name, coding] of [
          [image() + part('Content-Disposition: form-data; name="json"\r\nContent-Transfer-Encoding: quoted-printable', quoted), 'json', 'quoted-printable'],
          [image() + part('Content-Disposition: form-data; name="json"\r\nContent-Transfer-Encoding: BASE64', Buffer.from(dish({ code: 'CODED-PART' })).toString('base64')), 'json', 'base64'],
          [image('\r\nContent-Transfer-Encoding: base64') + part('Content-Disposition: form-data; name="json"', dish({ code: 'CODED-PART' })), '', 'base64'],
        ]) {
          const res = await send(body);
          expect({ coding, status: res.status, errors: problem(res).errors }).toEqual({
            coding,
            status: 400,
            errors: [`The '${name}' part has Content-Transfer-Encoding '${coding}', which is not decoded: send the part's bytes as they are, with no Content-Transfer-Encoding (or 7bit, 8bit or binary).`],
          });
        }
        expect(await db.query("SELECT id FROM dishes WHERE code = 'CODED-PART'")).toEqual([]);
        // The encodings that leave the bytes as they are, in any case.
        const taken = await send(image('\r\nContent-Transfer-Encoding: Binary') + part('Content-Disposition: form-data; name="json"\r\nContent-Transfer-Encoding: 8bit', dish({ code: 'CODED-PART', description: 'Halloumi, 2 for 1' })));
        expect([taken.status, taken.body.data?.dish?.description]).toEqual([200, 'Halloumi, 2 for 1']);
      });

      it('a body that ends inside a file part, and the service answers on', async () => {
        const raw = (body: string) => post((r) => r.set('Content-Type', 'multipart/form-data; boundary=B').send(Buffer.from(body, 'latin1')));
        for (const name of ['file', '', 'json']) {
          const res = await raw(`--B\r\nContent-Disposition: form-data; name="${name}"; filename="a.png"\r\nContent-Type: image/png\r\n\r\nxx`);
          expect({ name, status: res.status, errors: problem(res).errors }).toEqual({
            name,
            status: 400,
            errors: ['The multipart body is malformed: it ends before its closing boundary (CRLF, then -- and the boundary and --).'],
          });
        }
        // A part whose headers are no headers, or larger than busboy reads (16 KiB): the reason, not just "malformed".
        for (const head of ['not a header line', `Content-Disposition: form-data; name="file"; filename="${'a'.repeat(20_000)}.png"`]) {
          const res = await raw(`--B\r\n${head}\r\n\r\nxx\r\n--B--\r\n`);
          expect({ status: res.status, errors: problem(res).errors }).toEqual({
            status: 400,
            errors: ["The multipart body is malformed: a part's headers must be lines such as Content-Disposition and Content-Type, at most 16 KiB in all."],
          });
        }
        const health = await request(t.http).get('/health/live');
        expect(health.status).toBe(200);
      });

      it('a json part of exactly 64 KiB is taken, one a byte larger refused, as a field or as a file', async () => {
        const sized = (bytes: number, code: string): string => {
          const base = dish({ code });
          return `${base.slice(0, -1)},"note":"${'n'.repeat(bytes - base.length - 10)}"}`;
        };
        const exact = sized(64 * 1024, 'JSON-64K');
        expect(Buffer.byteLength(exact)).toBe(64 * 1024);
        const taken = await post((r) => r.attach('', png, 'a.png').field('json', exact));
        expect({ status: taken.status, body: taken.body as unknown }).toMatchObject({ status: 200, body: { data: { dish: { code: 'JSON-64K' } } } });
        const before = [await count('dishes'), await count('dish_images')];
        const over = sized(64 * 1024 + 1, 'JSON-OVER');
        for (const build of [
          (r: request.Test) => r.attach('', png, 'a.png').field('json', over),
          (r: request.Test) => r.attach('', png, 'a.png').attach('json', Buffer.from(over), 'dish.json'),
          (r: request.Test) => r.attach('', png, 'a.png').attach('json', Buffer.alloc(300 * 1024, 0x20), 'dish.json'),
        ]) {
          const res = await post(build);
          expect(res.status).toBe(400);
          expect(problem(res).errors).toEqual(["The 'json' part is larger than 64 KiB."]);
        }
        expect([await count('dishes'), await count('dish_images')]).toEqual(before);
      });

      it('a json part whose bytes are no UTF-8, as a field or a file; U+FFFD sent as such is kept', async () => {
        const latin1 = Buffer.from(dish({ code: 'N10\u00e9' }), 'latin1');
        const raw = (disposition: string, json: Buffer) =>
          post((r) =>
            r.set('Content-Type', 'multipart/form-data; boundary=B').send(
              Buffer.concat([
                Buffer.from('--B\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n'),
                png,
                Buffer.from(`\r\n--B\r\nContent-Disposition: form-data; ${disposition}\r\n\r\n`),
                json,
                Buffer.from('\r\n--B--\r\n'),
              ]),
            ),
          );
        const before = [await count('dishes'), await count('dish_images')];
        for (const disposition of ['name="json"', 'name="json"; filename="dish.json"']) {
          const res = await raw(disposition, latin1);
          expect({ disposition, status: res.status, errors: problem(res).errors }).toEqual({ disposition, status: 400, errors: ["The 'json' part is not valid UTF-8."] });
        }
        expect([await count('dishes'), await count('dish_images')]).toEqual(before);
        const kept = await raw('name="json"', Buffer.from(dish({ code: 'FFFD-\ufffd' }), 'utf8'));
        expect(kept.status).toBe(200);
        expect(kept.body.data.dish.code).toBe('FFFD-\ufffd');
      });

      it("a json part's bytes are its own: U+FFFD elsewhere in the body hides no bad byte, and a declared charset=utf-8 is read strictly", async () => {
        const fffd = Buffer.from([0xef, 0xbf, 0xbd]);
        const form = (opts: { preamble?: Buffer; image?: Buffer; type?: string; json: Buffer }) =>
          post((r) =>
            r.set('Content-Type', 'multipart/form-data; boundary=B').send(
              Buffer.concat([
                opts.preamble ?? Buffer.alloc(0),
                Buffer.from('--B\r\nContent-Disposition: form-data; name="file"; filename="a.png"\r\nContent-Type: image/png\r\n\r\n'),
                opts.image ?? png,
                Buffer.from(`\r\n--B\r\nContent-Disposition: form-data; name="json"${opts.type ? `\r\nContent-Type: ${opts.type}` : ''}\r\n\r\n`),
                opts.json,
                Buffer.from('\r\n--B--\r\n'),
              ]),
            ),
          );
        const [head, tail] = dish({ code: 'BAD-@' }).split('@');
        const bad = Buffer.concat([Buffer.from(head), Buffer.from([0xff]), Buffer.from(tail)]);
        expect(() => new TextDecoder('utf-8', { fatal: true }).decode(bad)).toThrow();
        const before = [await count('dishes'), await count('dish_images')];
        const declaredMessage = "The 'json' part is not valid UTF-8, or holds U+FFFD in a part that names its charset: send U+FFFD in a part without a charset parameter.";
        for (const [opts, message] of [
          [{ image: Buffer.concat([png, fffd]), json: bad }, "The 'json' part is not valid UTF-8."],
          [{ preamble: Buffer.concat([fffd, Buffer.from('\r\n')]), json: bad }, "The 'json' part is not valid UTF-8."],
          [{ type: 'application/json; charset=utf-8', json: bad }, declaredMessage],
          [{ type: 'application/json; charset=UTF-8', image: Buffer.concat([png, fffd]), json: bad }, declaredMessage],
        ] as const) {
          const res = await form(opts);
          expect({ status: res.status, errors: problem(res).errors }).toEqual({ status: 400, errors: [message] });
        }
        expect([await count('dishes'), await count('dish_images')]).toEqual(before);
        const declared = await form({ type: 'application/json; charset=utf-8', json: Buffer.from(dish({ code: 'CAF\u00c9-\u{1f37d}' }), 'utf8') });
        expect({ status: declared.status, code: declared.body.data?.dish.code }).toEqual({ status: 200, code: 'CAF\u00c9-\u{1f37d}' });
        // Text of base64 letters in a part that names its charset is that text, not bytes in base64.
        const base64Dish = Buffer.from(Buffer.from(dish({ code: 'B64' })).toString('base64'));
        for (const [json, error] of [
          [base64Dish, "The 'json' part is not valid JSON."],
          [Buffer.from('true'), "The 'json' part must be a JSON object."],
        ] as const) {
          const res = await form({ type: 'application/json; charset=utf-8', json });
          expect({ status: res.status, errors: problem(res).errors }).toEqual({ status: 400, errors: [error] });
        }
        const bom = await form({ type: 'application/json; charset=utf-8', json: Buffer.from(`\ufeff${dish({ code: 'BOM-DECLARED' })}`, 'utf8') });
        expect({ status: bom.status, code: bom.body.data?.dish.code }).toEqual({ status: 200, code: 'BOM-DECLARED' });
        // C1 controls are no text sent in a charset: ISO-8859-1's 0x80-0x9F, UTF-8's U+0085.
        const c1 = "The 'json' part holds a C1 control character (U+0080 to U+009F) in a part that names its charset: send it as UTF-8, without a charset parameter.";
        for (const [charset, json] of [
          ['iso-8859-1', Buffer.from(dish({ code: 'EUR-\u0080\u0093' }), 'latin1')],
          ['utf-8', Buffer.from(dish({ code: 'NEL-\u0085' }), 'utf8')],
        ] as const) {
          const res = await form({ type: `application/json; charset=${charset}`, json });
          expect({ charset, status: res.status, errors: problem(res).errors }).toEqual({ charset, status: 400, errors: [c1] });
        }
        // A byte windows-1252 leaves undefined (0x81, 0x8D, 0x8F, 0x90, 0x9D) is one its charset cannot read.
        const undefinedByte = await form({ type: 'application/json; charset=windows-1252', json: Buffer.from(dish({ code: 'UNDEFINED-\u009d' }), 'latin1') });
        expect({ status: undefinedByte.status, errors: problem(undefinedByte).errors }).toEqual({
          status: 400,
          errors: ["The 'json' part names the charset windows-1252 but holds a byte it leaves undefined (0x81, 0x8D, 0x8F, 0x90 or 0x9D): send it as UTF-8, without a charset parameter."],
        });
        // windows-1252 is read as windows-1252 (the multipart reader decodes it as ISO-8859-1): 0x80 is €, 0x93 and 0x94 quotes.
        for (const charset of ['windows-1252', 'CP1252', 'x-cp1252']) {
          const cp1252 = await form({ type: `application/json; charset=${charset}`, json: Buffer.from(dish({ code: `${charset}-CAF\u00c9-\u0080-\u0093Q\u0094` }), 'latin1') });
          expect({ charset, status: cp1252.status, code: cp1252.body.data?.dish.code }).toEqual({ charset, status: 200, code: `${charset}-CAF\u00c9-\u20ac-\u201cQ\u201d` });
        }
        // US-ASCII is read as ISO-8859-1 by the reader too: a byte over 0x7F is none of it, and refused.
        const outside = "The 'json' part names the charset US-ASCII but holds bytes outside it: send it as UTF-8, without a charset parameter.";
        for (const charset of ['us-ascii', 'ASCII']) {
          const res = await form({ type: `text/plain; charset=${charset}`, json: Buffer.from(dish({ code: 'ASCII-\u00e9\u00ff' }), 'latin1') });
          expect({ charset, status: res.status, errors: problem(res).errors }).toEqual({ charset, status: 400, errors: [outside] });
        }
        const ascii = await form({ type: 'text/plain; charset="us-ascii"', json: Buffer.from(dish({ code: 'PLAIN-ASCII' }), 'latin1') });
        expect({ status: ascii.status, code: ascii.body.data?.dish.code }).toEqual({ status: 200, code: 'PLAIN-ASCII' });
        const undeclared = await form({ json: Buffer.from(dish({ code: 'NEL-\u0085' }), 'utf8') });
        expect({ status: undeclared.status, code: undeclared.body.data?.dish.code }).toEqual({ status: 200, code: 'NEL-\u0085' });
        const plain = await form({ json: Buffer.from(dish({ code: 'NA\u00cfVE' }), 'utf8') });
        expect({ status: plain.status, code: plain.body.data?.dish.code }).toEqual({ status: 200, code: 'NA\u00cfVE' });
      });

      it('a menu that has ended (GET /menus no longer lists it); one that ends today takes dishes', async () => {
        const ended = addDays(localDate(t.config.RESULTS_TIMEZONE), -1);
        const before = [await count('dishes'), await count('dish_images')];
        const res = await post((r) => r.attach('', png, 'a.png').field('json', dish({ menuId: 104, code: 'ENDED' })));
        expect(res.status).toBe(400);
        expect(problem(res).errors).toEqual([`'menuId' 104 is a menu that ended on ${ended}: dishes are added to active menus (as GET /menus lists them).`]);
        expect([await count('dishes'), await count('dish_images')]).toEqual(before);
        const lastDay = await post((r) => r.attach('', png, 'a.png').field('json', dish({ menuId: 103, code: 'LAST-DAY' })));
        expect(lastDay.status).toBe(200);
      });

      it('a menu of another client, and a menu id no menu has, alike: a 403, nothing written', async () => {
        const before = [await count('dishes'), await count('dish_images')];
        for (const menuId of [201, 999]) {
          const res = await post((r) => r.attach('', png, 'a.png').field('json', dish({ menuId })));
          expect(res.status).toBe(403);
          expect(problem(res)).toEqual({ title: 'Forbidden', status: 403, detail: `Menu ${menuId} is not a menu of SvcClientId 1001.`, instance: expect.any(String) });
        }
        expect([await count('dishes'), await count('dish_images')]).toEqual(before);
      });
    });

    it('refuses an image over the size limit with a 413 naming the limit, closes the connection and writes nothing', async () => {
      const before = [await count('dishes'), await count('dish_images')];
      const noise = Buffer.alloc(300 * 1024, 7);
      const res = await post((r) => r.field('json', dish({ code: 'TOO-BIG' })).attach('', noise, 'big.png'));
      expect(res.status).toBe(413);
      expect(res.headers.connection).toBe('close');
      expect(problem(res)).toEqual({
        title: 'Payload Too Large',
        status: 413,
        detail: "The request body is larger than the service accepts; see 'errors' for the limit.",
        instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
        errors: ['The image must be at most 204800 bytes (200 KiB).'],
      });
      expect([await count('dishes'), await count('dish_images')]).toEqual(before);
    });

    it('takes an image of exactly the size limit, and refuses one a byte larger', async () => {
      const limit = 200 * 1024;
      const [exact, over] = [pngOfSize(limit), pngOfSize(limit + 1)];
      expect([exact.length, over.length]).toEqual([limit, limit + 1]);
      const taken = await post((r) => r.field('json', dish({ code: 'AT-LIMIT' })).attach('', exact, 'exact.png'));
      expect(taken.status).toBe(200);
      expect(taken.body.data.dish.image).toMatchObject({ contentType: 'image/png', bytes: limit, width: 255, height: exact.readUInt32BE(20) });
      const refused = await post((r) => r.field('json', dish({ code: 'OVER-LIMIT' })).attach('', over, 'over.png'));
      expect(refused.status).toBe(413);
      expect(problem(refused).errors).toEqual(['The image must be at most 204800 bytes (200 KiB).']);
    });

    it('takes an ISO 8601 date-time as the expiry date and keeps the date written in it', async () => {
      const png = await makeImage('png', 8, 8);
      for (const [expiryDate, kept] of [
        ['2026-12-31T23:59:59+01:00', '2026-12-31'],
        ['2026-12-30T10:00Z', '2026-12-30'],
        ['2026-12-29T00:00:00.123', '2026-12-29'],
      ]) {
        const res = await post((r) => r.field('json', dish({ code: `EXP-${kept}`, expiryDate })).attach('', png, 'e.png'));
        expect([res.status, res.body.data.dish.expiryDate]).toEqual([200, kept]);
      }
    });

    it('counts a keyword\'s length in characters, as it counts the other fields\'', async () => {
      const png = await makeImage('png', 8, 8);
      const fifty = '😀'.repeat(50);
      const taken = await post((r) => r.field('json', dish({ code: fifty, keywords: [fifty] })).attach('', png, 'k.png'));
      expect(taken.status).toBe(200);
      expect(taken.body.data.dish).toMatchObject({ code: fifty, keywords: [fifty] });
      const refused = await post((r) => r.field('json', dish({ code: 'K51', keywords: [`${fifty}a`] })).attach('', png, 'k.png'));
      expect(refused.status).toBe(400);
      expect(problem(refused).errors).toEqual(["'keywords[0]' must be at most 50 characters."]);
    });

    it('leaves exactly one dish and one image after twenty concurrent posts of one code', async () => {
      const images = await count('dish_images');
      const bodies = await Promise.all(Array.from({ length: 20 }, (_, i) => makeImage('png', 10 + i, 10)));
      const results = await Promise.all(bodies.map((b, i) => post((r) => r.attach('', b, 'p.png').field('json', dish({ code: 'RACE', order: i })))));
      expect(results.map((r) => r.status)).toEqual(Array(20).fill(200));
      const rows = await db.query<{ id: number }[]>("SELECT id FROM dishes WHERE code = 'RACE'");
      expect(rows).toHaveLength(1);
      expect(new Set(results.map((r) => (r.body.data.dish as DishRecord).id))).toEqual(new Set([rows[0].id]));
      // Each answer is the dish its own post wrote, with its own image: not one a later post replaced.
      expect(results.map((r) => ({ order: r.body.data.dish.order, width: r.body.data.dish.image?.width }))).toEqual(bodies.map((_, i) => ({ order: i, width: 10 + i })));
      expect(await count('dish_images')).toBe(images + 1);
    });

    it('adds a dish only when told If-None-Match: * and the code is new (one of ten concurrent posts), and replaces one only when told If-Match: * and it exists', async () => {
      const images = await count('dish_images');
      const bodies = await Promise.all(Array.from({ length: 10 }, (_, i) => makeImage('png', 10 + i, 10)));
      const results = await Promise.all(
        bodies.map((b, i) => post((r) => r.set('If-None-Match', '*').attach('', b, 'p.png').field('json', dish({ code: 'ONCE', order: i })))),
      );
      expect(results.map((r) => r.status).sort()).toEqual([200, ...Array(9).fill(412)]);
      const refused = results.find((r) => r.status === 412)!;
      expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(problem(refused)).toMatchObject({
        status: 412,
        detail: "If-None-Match: * asks for a new dish, and menu 102 has one with code 'ONCE': send no If-None-Match to replace it.",
      });
      const kept = results.find((r) => r.status === 200)!.body.data.dish as DishRecord;
      expect(await db.query<{ o: number }[]>("SELECT sort_order AS o FROM dishes WHERE code = 'ONCE'")).toEqual([{ o: kept.order }]);
      // The refused posts stored no image.
      expect(await count('dish_images')).toBe(images + 1);

      const png = bodies[0];
      const missing = await post((r) => r.set('If-Match', '*').attach('', png, 'p.png').field('json', dish({ code: 'NOT-THERE' })));
      expect([missing.status, problem(missing).detail]).toEqual([412, "If-Match: * asks to replace a dish, and menu 102 has none with code 'NOT-THERE': send no If-Match to add it."]);
      expect(await db.query("SELECT id FROM dishes WHERE code = 'NOT-THERE'")).toEqual([]);
      // A code with 'eyJ' inside a word is quoted as it is; a JWT in its place is not quoted back.
      for (const [code, quoted] of [
        ['TurkeyJerky.Large.2', 'TurkeyJerky.Large.2'],
        ['eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln', '[redacted]'],
      ]) {
        const absent = await post((r) => r.set('If-Match', '*').attach('', png, 'p.png').field('json', dish({ code })));
        expect(absent.status).toBe(412);
        expect(absent.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(problem(absent)).toMatchObject({
          status: 412,
          detail: `If-Match: * asks to replace a dish, and menu 102 has none with code '${quoted}': send no If-Match to add it.`,
        });
      }
      const replaced = await post((r) => r.set('If-Match', '*').attach('', png, 'p.png').field('json', dish({ code: 'ONCE', order: 99 })));
      expect([replaced.status, replaced.body.data.dish.order]).toEqual([200, 99]);
      const tagged = await post((r) => r.set('If-Match', '"abc"').attach('', png, 'p.png').field('json', dish({ code: 'ONCE', order: 98 })));
      expect([tagged.status, problem(tagged).detail]).toEqual([412, 'If-Match names entity tags, and a dish has none: send If-Match: * to write only over an existing one.']);
      // If-None-Match naming tags always holds: no tag names a dish.
      const untagged = await post((r) => r.set('If-None-Match', '"abc"').attach('', png, 'p.png').field('json', dish({ code: 'ONCE', order: 97 })));
      expect([untagged.status, untagged.body.data.dish.order]).toEqual([200, 97]);
      // A field that is neither * nor tags cannot be told: a 412, and the dish stays as it was.
      const garbled = await post((r) => r.set('If-None-Match', '*x').attach('', png, 'p.png').field('json', dish({ code: 'ONCE', order: 96 })));
      expect([garbled.status, problem(garbled).detail]).toEqual([
        412,
        'If-None-Match is neither * nor a list of entity tags ("tag" or W/"tag"), and nothing was written: send If-None-Match: * to add only, or leave it out.',
      ]);
      expect(await db.query<{ o: number }[]>("SELECT sort_order AS o FROM dishes WHERE code = 'ONCE'")).toEqual([{ o: 97 }]);
      // A precondition is weighed last: a menu id that is none of the client's is its 403, whatever If-Match says.
      const elsewhere = await post((r) => r.set('If-Match', '"abc"').attach('', png, 'p.png').field('json', dish({ menuId: 999_999, code: 'ONCE' })));
      expect([elsewhere.status, problem(elsewhere).detail]).toEqual([403, 'Menu 999999 is not a menu of SvcClientId 1001.']);
    });
  });
});

describe(`image writes are all or nothing (${process.env.TEST_DATABASE}, filesystem storage)`, () => {
  let t: TestApp;
  const folder = mkdtempSync(join(tmpdir(), 'images-'));
  beforeAll(async () => {
    t = await startTestApp({ IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: folder });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('leaves no image file or row when the transaction fails after the image was written', async () => {
    const repo = t.app.get(MenusRepository);
    const { prepareImage } = await import('../src/menus/image-inspector.js');
    const image = await prepareImage(await makeImage('png'), { maxBytes: 1e6, maxPixels: 1e6 });
    const menu = (id: number, clientId: number) => Object.assign(new Menu(), { id, clientId, name: 'M', startDate: '2026-01-01', endDate: null });
    const dish = { menuId: 301, code: 'A', description: 'A', type: 'Main', order: null, expiryDate: null, keywords: '[]' };
    await expect(
      repo.saveMenus([
        { menu: menu(301, 1001), dishes: [{ dish, image }] },
        // A client that does not exist: the foreign key fails after the first image was stored.
        { menu: menu(302, 4242), dishes: [] },
      ]),
    ).rejects.toThrow();
    expect(readdirSync(folder)).toEqual([]);
    expect(await repo.count()).toEqual({ menus: 0, dishes: 0, images: 0 });

    await repo.saveMenus([{ menu: menu(301, 1001), dishes: [{ dish, image }] }]);
    expect(readdirSync(folder)).toHaveLength(1);
  });

  it("never moves a menu of another client to the writer's, even one written after the importer looked (a concurrent import)", async () => {
    const repo = t.app.get(MenusRepository);
    const menu = (clientId: number, name: string) => Object.assign(new Menu(), { id: 777, clientId, name, startDate: '2026-01-01', endDate: null });
    await repo.saveMenus([{ menu: menu(1002, 'Theirs'), dishes: [] }]);
    const dish = { menuId: 777, code: 'MINE', description: 'A', type: 'Main', order: null, expiryDate: null, keywords: '[]' };
    await expect(repo.saveMenus([{ menu: menu(1001, 'Mine'), dishes: [{ dish, image: null }] }])).rejects.toThrow(
      '1 of the menus being written belong to another client now (written by another import meanwhile): nothing of this batch was written.',
    );
    expect(await t.app.get(DataSource).query('SELECT client_id, name FROM menus WHERE id = 777')).toEqual([{ client_id: 1002, name: 'Theirs' }]);
    expect(await t.app.get(DataSource).query("SELECT id FROM dishes WHERE code = 'MINE'")).toEqual([]);
  });

  it('writes two imports of the same menus listed in other orders one after the other, never deadlocking', async () => {
    const repo = t.app.get(MenusRepository);
    const menu = (id: number) => Object.assign(new Menu(), { id, clientId: 1001, name: `Menu ${id}`, startDate: '2026-01-01', endDate: null });
    const file = (ids: number[], writer: string) =>
      ids.map((id) => ({
        menu: menu(id),
        dishes: Array.from({ length: 15 }, (_, n) => ({
          dish: { menuId: id, code: `D${n}`, description: writer, type: 'Main', order: n, expiryDate: null, keywords: '[]' },
          image: null,
        })),
      }));
    for (let round = 0; round < 6; round++) {
      const results = await Promise.allSettled([repo.saveMenus(file([911, 912, 913], `A${round}`)), repo.saveMenus(file([913, 912, 911], `B${round}`))]);
      expect({ round, statuses: results.map((r) => r.status) }).toEqual({ round, statuses: ['fulfilled', 'fulfilled'] });
      // Each import is written whole, the later over the earlier: every dish of the three menus is one writer's.
      const writers = await t.app.get(DataSource).query<{ description: string }[]>('SELECT DISTINCT description FROM dishes WHERE menu_id IN (911, 912, 913)');
      expect(writers).toHaveLength(1);
    }
  });

  it('sweeps the files no image names, once old enough, and nothing else', async () => {
    const repo = t.app.get(MenusRepository);
    const sweeper = t.app.get(ImageSweeper);
    const { prepareImage } = await import('../src/menus/image-inspector.js');
    const image = await prepareImage(await makeImage('png'), { maxBytes: 1e6, maxPixels: 1e6 });
    await repo.saveMenus([
      { menu: Object.assign(new Menu(), { id: 303, clientId: 1001, name: 'M', startDate: '2026-01-01', endDate: null }), dishes: [] },
    ]);
    await repo.saveDish({ menuId: 303, code: 'KEPT', description: 'A', type: 'Main', order: null, expiryDate: null, keywords: '[]' }, image);
    const named = (await t.app.get(DataSource).query<{ storage_key: string }[]>('SELECT storage_key FROM dish_images')).map((r) => r.storage_key);
    // What a process killed between its image write and its commit leaves, and what is not the storage's.
    const hourAgo = new Date(Date.now() - 2 * 3600_000);
    const orphan = randomUUID();
    const temporary = `.${randomUUID()}.${randomUUID()}.tmp`;
    const recent = randomUUID();
    for (const name of [orphan, temporary, recent, 'notes.txt']) writeFileSync(join(folder, name), 'bytes');
    for (const name of [orphan, temporary, 'notes.txt', ...named]) utimesSync(join(folder, name), hourAgo, hourAgo);

    const dry = await sweeper.sweep({ minAgeMs: 3600_000, dryRun: true });
    expect(dry).toEqual({
      folder: resolve(folder),
      checked: named.length + 3,
      orphans: [orphan, temporary].sort().map((name) => ({ name, bytes: 5, modifiedAt: hourAgo.toISOString() })),
      tooRecent: 1,
      removed: false,
      damaged: [],
    });
    expect(readdirSync(folder).sort()).toEqual([...named, orphan, temporary, recent, 'notes.txt'].sort());

    expect(await sweeper.sweep({ minAgeMs: 3600_000, dryRun: false })).toMatchObject({ orphans: dry.orphans, removed: true });
    expect(readdirSync(folder).sort()).toEqual([...named, recent, 'notes.txt'].sort());
    // Every image is still served from its file.
    for (const key of named) expect((await repo.readImage(Object.assign(new DishImage(), { storageKey: key, data: null }))).length).toBeGreaterThan(0);
  });

  it("leaves a file an upload may still be writing when the sweep's host has a clock an hour ahead: it goes by the folder's clock too", async () => {
    const sweeper = t.app.get(ImageSweeper);
    // What an upload under way on another replica has written (its row not yet committed), stamped by the folder's clock.
    const writing = randomUUID();
    writeFileSync(join(folder, writing), 'bytes');
    try {
      const report = await withSystemClockOff(2 * 3600_000, () => sweeper.sweep({ minAgeMs: 3600_000, dryRun: true }));
      expect(report.orphans.map((o) => o.name)).not.toContain(writing);
      expect(report.tooRecent).toBeGreaterThanOrEqual(1);
      // The folder's clock was read with a file of its own, which is gone.
      expect(readdirSync(folder).filter((name) => name.endsWith('.tmp'))).toEqual([]);
    } finally {
      rmSync(join(folder, writing), { force: true });
    }
  });

  it('serves an image only while its file holds what was stored: missing, cut short or changed, it is a 500, never those bytes under the stored ETag', async () => {
    const repo = t.app.get(MenusRepository);
    const { prepareImage } = await import('../src/menus/image-inspector.js');
    const image = await prepareImage(await makeImage('png', 30, 20), { maxBytes: 1e6, maxPixels: 1e6 });
    await repo.saveMenus([
      { menu: Object.assign(new Menu(), { id: 305, clientId: 1001, name: 'M', startDate: '2026-01-01', endDate: null }), dishes: [] },
    ]);
    const saved = await repo.saveDish({ menuId: 305, code: 'DAMAGED', description: 'A', type: 'Main', order: null, expiryDate: null, keywords: '[]' }, image);
    const { storageKey: key } = await t.app.get(DataSource).getRepository(DishImage).findOneByOrFail({ id: saved.image!.id });
    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const get = () => request(t.http).get(`/menus/dishes/images/${saved.image!.id}?SvcClientId=1001`).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    const intact = await get();
    expect([intact.status, intact.headers.etag, Buffer.compare(intact.body as Buffer, image.data)]).toEqual([200, `"${image.sha256}"`, 0]);

    const file = join(folder, key!);
    const damage = [
      () => writeFileSync(file, image.data.subarray(0, 10)),
      () => writeFileSync(file, Buffer.from(image.data.map((b, i) => (i === image.data.length - 5 ? b ^ 0xff : b)))),
      () => rmSync(file),
    ];
    for (const [n, damaged] of damage.entries()) {
      damaged();
      const res = await get();
      expect({ n, status: res.status, type: res.headers['content-type'], etag: res.headers.etag, cache: res.headers['cache-control'] }).toEqual({
        n,
        status: 500,
        type: 'application/problem+json; charset=utf-8',
        etag: undefined,
        cache: 'no-store',
      });
      writeFileSync(file, image.data);
    }
    expect((await get()).status).toBe(200);

    // The way out the README gives: the same image uploaded again is written again over a file
    // lost, cut short or changed at its size (it was taken for unchanged, and stayed a 500).
    const dish = { menuId: 305, code: 'DAMAGED', description: 'A', type: 'Main', order: null, expiryDate: null, keywords: '[]' };
    const getImage = (id: string) =>
      request(t.http).get(`/menus/dishes/images/${id}?SvcClientId=1001`).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    for (const [n, damaged] of [
      (at: string) => rmSync(at),
      (at: string) => writeFileSync(at, image.data.subarray(0, 10)),
      // Other bytes at the stored size (a disk fault that `images sweep --verify` finds).
      (at: string) => writeFileSync(at, Buffer.from(image.data.map((b, i) => (i === image.data.length - 5 ? b ^ 0xff : b)))),
    ].entries()) {
      const before = await t.app.get(DataSource).getRepository(DishImage).findOneByOrFail({ sha256: image.sha256 });
      damaged(join(folder, before.storageKey!));
      expect((await getImage(before.id)).status).toBe(500);
      const again = await repo.saveDish(dish, image);
      const res = await getImage(again.image!.id);
      expect({ n, status: res.status, etag: res.headers.etag, type: res.headers['content-type'], same: Buffer.isBuffer(res.body) ? Buffer.compare(res.body, image.data) : null }).toEqual({
        n,
        status: 200,
        etag: `"${image.sha256}"`,
        type: 'image/png',
        same: 0,
      });
      expect(again.image!.id).not.toBe(before.id);
    }
    // Intact, it is left as it is: the same image again keeps its id.
    const kept = await t.app.get(DataSource).getRepository(DishImage).findOneByOrFail({ sha256: image.sha256 });
    expect((await repo.saveDish(dish, image)).image!.id).toBe(kept.id);
  });

  it("answers a replacement as written when the replaced image's file cannot be removed, and leaves that file", async () => {
    const repo = t.app.get(MenusRepository);
    const { prepareImage } = await import('../src/menus/image-inspector.js');
    const first = await prepareImage(await makeImage('png'), { maxBytes: 1e6, maxPixels: 1e6 });
    const second = await prepareImage(await makeImage('jpeg', 40, 30, '#2980b9'), { maxBytes: 1e6, maxPixels: 1e6 });
    await repo.saveMenus([
      { menu: Object.assign(new Menu(), { id: 304, clientId: 1001, name: 'M', startDate: '2026-01-01', endDate: null }), dishes: [] },
    ]);
    const dish = { menuId: 304, code: 'STUCK', description: 'First', type: 'Main', order: null, expiryDate: null, keywords: '[]' };
    await repo.saveDish(dish, first);
    const keyOf = async (): Promise<string[]> =>
      (
        await t.app.get(DataSource).query<{ storage_key: string }[]>(
          "SELECT i.storage_key FROM dishes d JOIN dish_images i ON i.id = d.image_id WHERE d.menu_id = 304 AND d.code = 'STUCK'",
        )
      ).map((r) => r.storage_key);
    const [old] = await keyOf();
    // A file the system will not remove (as on a folder mounted read-only): a folder holding a file in its place.
    rmSync(join(folder, old));
    mkdirSync(join(folder, old));
    writeFileSync(join(folder, old, 'held'), 'x');
    try {
      const saved = await repo.saveDish({ ...dish, description: 'Second' }, second);
      expect(saved.dish.description).toBe('Second');
      expect(saved.image).toMatchObject({ contentType: 'image/jpeg', width: 40, height: 30 });
      const [now] = await keyOf();
      expect(now).not.toBe(old);
      expect(await repo.readImage(Object.assign(new DishImage(), { storageKey: now, data: null }))).toEqual(second.data);
      // The replaced image's entry is still there, for the sweep or the operator.
      expect(readdirSync(folder)).toContain(old);
    } finally {
      rmSync(join(folder, old), { recursive: true, force: true });
    }
  });
});

describe(`image sweep with images kept in the database (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  const folder = mkdtempSync(join(tmpdir(), 'images-before-switch-'));
  beforeAll(async () => {
    t = await startTestApp({ IMAGE_STORAGE: 'database', IMAGE_STORAGE_DIR: folder });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('has nothing to sweep while the folder holds no files of the storage, and tidies the folder of images stored before the switch', async () => {
    const sweeper = t.app.get(ImageSweeper);
    const none = { folder: null, checked: 0, orphans: [], tooRecent: 0, removed: false, damaged: [] };
    expect(await sweeper.sweep({ minAgeMs: 3600_000, dryRun: false })).toEqual(none);
    // An image kept in the database, as a deployment that switched has: a database that keeps
    // none is refused a sweep of a folder of which it names no file (see image-sweep-settings).
    await t.app.get(DataSource).getRepository(DishImage).insert({ id: randomUUID(), contentType: 'image/png', bytes: 5, width: 1, height: 1, sha256: 'x'.repeat(64), data: Buffer.from('bytes') });
    // What a replacement whose removal failed leaves of an image stored in a file before the switch, and what is not the storage's.
    const hourAgo = new Date(Date.now() - 2 * 3600_000);
    const orphan = randomUUID();
    for (const name of [orphan, 'notes.txt']) {
      writeFileSync(join(folder, name), 'bytes');
      utimesSync(join(folder, name), hourAgo, hourAgo);
    }
    expect(await sweeper.sweep({ minAgeMs: 3600_000, dryRun: false })).toEqual({
      folder: resolve(folder),
      checked: 1,
      orphans: [{ name: orphan, bytes: 5, modifiedAt: hourAgo.toISOString() }],
      tooRecent: 0,
      removed: true,
      damaged: [],
    });
    expect(readdirSync(folder)).toEqual(['notes.txt']);
    expect(await sweeper.sweep({ minAgeMs: 3600_000, dryRun: false })).toEqual(none);
  });
});
