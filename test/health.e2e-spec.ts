import { readFileSync } from 'node:fs';
import type { Server } from 'node:http';
import { gzipSync } from 'node:zlib';
import { jest } from '@jest/globals';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { issueCredential, seedClients } from './helpers/auth.js';
import { eventually } from './helpers/eventually.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

const INSTANCE = /^urn:svc:api:results:error:[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

describe(`health and errors (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
  });
  afterAll(async () => {
    await t.close();
  });

  it('GET /health/live answers 200', async () => {
    const res = await request(t.http).get('/health/live');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.body).toEqual({ status: 'ok' });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it("answers a GET with no validator in full whatever its If-None-Match says: there is nothing it could hold", async () => {
    for (const path of ['/health/live', '/.well-known/jwks.json', '/.well-known/oauth-authorization-server']) {
      const res = await request(t.http).get(path).set('If-None-Match', '*');
      expect([path, res.status, res.headers.etag]).toEqual([path, 200, undefined]);
      expect(Object.keys(res.body as object).length).toBeGreaterThan(0);
    }
  });

  it("gives the discovery documents, which shared caches keep for everyone, a request id of their own, never the caller's", async () => {
    for (const path of ['/.well-known/jwks.json', '/.well-known/oauth-authorization-server']) {
      const first = await request(t.http).get(path).set('X-Request-Id', 'partner-a-job-42');
      const second = await request(t.http).get(path).set('X-Request-Id', 'partner-a-job-42');
      expect([path, first.status, first.headers['cache-control']]).toEqual([path, 200, expect.stringMatching(/^public, max-age=\d+$/)]);
      expect(first.headers['x-request-id']).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
      expect(second.headers['x-request-id']).not.toBe(first.headers['x-request-id']);
      expect(second.body).toEqual(first.body);
    }
    // Answers no shared cache keeps still echo the caller's.
    const live = await request(t.http).get('/health/live').set('X-Request-Id', 'partner-a-job-42');
    expect([live.headers['cache-control'], live.headers['x-request-id']]).toEqual(['no-store', 'partner-a-job-42']);
  });

  it('never echoes or keeps a request id that is a credential by its form (a client secret, an API key): the request gets an id of its own', async () => {
    await seedClients(t);
    const { clientSecret, apiKey } = await issueCredential(t);
    expect(clientSecret).toMatch(/^svcs_/);
    for (const given of [clientSecret, apiKey]) {
      const res = await request(t.http).get('/health/live').set('X-Request-Id', given);
      expect([res.status, res.headers['x-request-id']]).toEqual([200, expect.stringMatching(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)]);
    }
  });

  it('keeps an idle connection open longer than the proxies in front keep theirs, and says so', async () => {
    const res = await request(t.http).get('/health/live').set('Connection', 'keep-alive');
    expect(res.status).toBe(200);
    expect(res.headers['keep-alive']).toBe('timeout=65');
  });

  it('GET /health/ready answers 200 with the database and migrations up', async () => {
    const res = await request(t.http).get('/health/ready');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', info: { database: { status: 'up' }, migrations: { status: 'up' } } });
    expect(res.headers['cache-control']).toBe('no-store');
  });

  it('an unknown route is a problem+json 404 with a fresh instance URN', async () => {
    const first = await request(t.http).get('/no/such/thing');
    const second = await request(t.http).get('/no/such/thing');
    expect(first.status).toBe(404);
    expect(first.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    // No error is stored by a cache (a 404 may be, by heuristics, without a word).
    expect(first.headers['cache-control']).toBe('no-store');
    const body = JSON.parse(first.text);
    expect(body).toEqual({ title: 'Not Found', status: 404, detail: expect.any(String), instance: expect.stringMatching(INSTANCE) });
    expect(JSON.parse(second.text).instance).not.toBe(body.instance);
  });

  it('does not announce the framework', async () => {
    const res = await request(t.http).get('/health/live');
    expect(res.headers['x-powered-by']).toBeUndefined();
  });

  it('refuses a JSON body over 64 KiB with a 413 naming the limit, before the credentials are looked at', async () => {
    const res = await request(t.http)
      .post('/menus/dishes?SvcClientId=1001')
      .set('Content-Type', 'application/json')
      .send(JSON.stringify({ padding: 'x'.repeat(70 * 1024) }));
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(res.text)).toMatchObject({
      status: 413,
      detail: "The request body is larger than the service accepts; see 'errors' for the limit.",
      errors: ['The request body must be at most 65536 bytes (64 KiB).'],
    });
  });

  it('says a JSON body that does not parse is not valid JSON, before the credentials are looked at', async () => {
    const res = await request(t.http).post('/menus/dishes?SvcClientId=1001').set('Content-Type', 'application/json').send('{"menuId": 1,');
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(res.text)).toMatchObject({ status: 400, errors: ['The request body is not valid JSON.'] });
    // One that parses is read as what it is: no multipart form.
    const parsed = await request(t.http).post('/menus/dishes?SvcClientId=1001').set('Content-Type', 'application/json').send('{"menuId": 1}');
    expect(parsed.status).toBe(401);
    // decisions.md quotes the messages such bodies get, and where they are (errors, not the detail).
    const decisions = readFileSync(new URL('../docs/decisions.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    const malformed = await request(t.http).post('/menus/dishes?SvcClientId=1001').set('Content-Type', 'application/x-www-form-urlencoded').set('Content-Encoding', 'gzip').send('not gzip');
    // A body that does not decompress is said to be so (it was 'The request body is malformed.'),
    // and so is one cut short.
    const cut = await request(t.http)
      .post('/menus/dishes?SvcClientId=1001')
      .set('Content-Type', 'application/json')
      .set('Content-Encoding', 'gzip')
      .send(gzipSync('{"menuId": 1}').subarray(0, 12));
    for (const answer of [malformed, cut]) {
      expect(answer.status).toBe(400);
      expect(JSON.parse(answer.text)).toMatchObject({ status: 400, errors: ['The request body cannot be decoded as its Content-Encoding says.'] });
    }
    for (const answer of [res, malformed]) {
      const { errors } = JSON.parse(answer.text) as { errors: string[] };
      expect(decisions).toContain(`its \`errors\` say what was wrong in the service's own words`);
      expect(decisions).toContain(`\`${errors[0]}\``);
    }
  });

  it('asks shared caches to revalidate every answer under /docs, the page and the contract included', async () => {
    for (const path of ['/docs', '/docs/', '/docs/openapi.json', '/docs/openapi.yaml', '/docs/swagger-ui-init.js', '/docs/swagger-ui.css', '/docs/index.html']) {
      for (const method of ['get', 'head'] as const) {
        const res = await request(t.http)[method](path);
        expect([path, method, res.status, res.headers['cache-control']]).toEqual([path, method, path === '/docs/index.html' ? 301 : 200, 'no-cache']);
      }
    }
    // A file keeps its validator, so a cache that asks again gets a 304.
    const css = await request(t.http).get('/docs/swagger-ui.css');
    const again = await request(t.http).get('/docs/swagger-ui.css').set('If-None-Match', css.headers.etag);
    expect([again.status, again.headers['cache-control'], again.headers.etag]).toEqual([304, 'no-cache', css.headers.etag]);
    // A cache that revalidates because its client said no-cache still gets its 304.
    for (const path of ['/docs/swagger-ui.css', '/docs/swagger-ui-bundle.js']) {
      const tag = (await request(t.http).get(path)).headers.etag;
      const revalidated = await request(t.http).get(path).set('If-None-Match', tag).set('Cache-Control', 'no-cache');
      expect([path, revalidated.status, revalidated.headers.etag]).toEqual([path, 304, tag]);
    }
    // A problem under /docs is still no-store.
    const missing = await request(t.http).get('/docs/nothing.js');
    expect([missing.status, missing.headers['cache-control']]).toEqual([404, 'no-store']);
  });

  it('serves under /docs only the page, the files it links and the contract, not the rest of the package they come from', async () => {
    for (const path of ['/docs/swagger-ui-bundle.js', '/docs/swagger-ui-standalone-preset.js', '/docs/favicon-32x32.png', '/docs/favicon-16x16.png']) {
      expect([path, (await request(t.http).get(path)).status]).toEqual([path, 200]);
    }
    const files = ['package.json', 'README.md', 'LICENSE', 'NOTICE', 'index.js', 'index.css', 'swagger-initializer.js', 'swagger-ui-bundle.js.map', 'oauth2-redirect.html', 'absolute-path.js', 'swagger-ui.js'];
    for (const path of [...files.map((file) => `/docs/${file}`), '/docs/x/..', '/docs/SWAGGER-UI.CSS', '/docs/swagger-ui.css/', '/docs/swagger-ui-init.js/', '/docs//package.json', '/docs//x//swagger-ui.css', '/docs/package.json?x=1']) {
      for (const method of ['get', 'head'] as const) {
        const res = await request(t.http)[method](path);
        expect([path, method, res.status, res.headers['content-type'], res.headers['cache-control']]).toEqual([path, method, 404, 'application/problem+json; charset=utf-8', 'no-store']);
        if (method === 'get') expect(JSON.parse(res.text).detail).toBe(`No endpoint has the path ${path.split('?')[0]}.`);
      }
    }
  });

  it('takes If-Match under /docs by strong comparison, which its weak tags never pass, and an If-None-Match that is no list of tags as naming none', async () => {
    const path = '/docs/swagger-ui.css';
    const tag = (await request(t.http).get(path)).headers.etag;
    expect(tag).toMatch(/^W\/"/);
    for (const ifMatch of [tag, tag.slice(2), 'abc']) {
      const res = await request(t.http).get(path).set('If-Match', ifMatch);
      expect([ifMatch, res.status, res.headers['content-type']]).toEqual([ifMatch, 412, 'application/problem+json; charset=utf-8']);
    }
    expect((await request(t.http).get(path).set('If-Match', '*')).status).toBe(200);
    // The contract has no tag: one named in If-Match is none of its.
    expect((await request(t.http).get('/docs/openapi.json').set('If-Match', '"x"')).status).toBe(412);
    expect((await request(t.http).get('/docs/openapi.json').set('If-Match', '*')).status).toBe(200);
    // A list of tags that holds the current one: 304; a field that is no list: the whole answer, If-Modified-Since not weighed.
    expect((await request(t.http).get(path).set('If-None-Match', `"x", ${tag}`)).status).toBe(304);
    const unlisted = await request(t.http).get(path).set('If-None-Match', `abc, ${tag}`).set('If-Modified-Since', new Date(Date.now() + 86_400_000).toUTCString());
    expect([unlisted.status, unlisted.headers.etag]).toEqual([200, tag]);
  });

  it('serves Swagger UI at /docs and the contract at /docs/openapi.json', async () => {
    // A shared cache may keep it (no-cache): its request id is its own, never the caller's.
    const uuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
    const ui = await request(t.http).get('/docs/').set('X-Request-Id', 'docs-check-1');
    expect(ui.headers['x-request-id']).toMatch(uuid);
    for (const path of ['/docs', '/docs/openapi.json', '/docs/swagger-ui.css']) {
      for (const method of ['get', 'head'] as const) {
        const res = await request(t.http)[method](path).set('X-Request-Id', 'docs-check-2');
        expect([path, method, res.status, res.headers['x-request-id']]).toEqual([path, method, 200, expect.stringMatching(uuid)]);
      }
    }
    expect(ui.status).toBe(200);
    expect(ui.text).toContain('swagger-ui');
    // Its files are linked relative to the page, a query or none: /docs/ links ./swagger-ui.css, /docs ./docs/swagger-ui.css.
    for (const [path, css] of [['/docs/', './swagger-ui.css'], ['/docs/?x=1', './swagger-ui.css'], ['/docs', './docs/swagger-ui.css'], ['/docs?x=1', './docs/swagger-ui.css']]) {
      const page = await request(t.http).get(path);
      expect([path, page.status, /href="([^"]*swagger-ui\.css)"/.exec(page.text)?.[1]]).toEqual([path, 200, css]);
    }
    expect((await request(t.http).get('/docs/swagger-ui.css')).status).toBe(200);
    // /docs/index.html, whose page would link ./docs/… from /docs/, is sent to /docs/.
    for (const path of ['/docs/index.html', '/docs/index.html?x=1']) {
      const moved = await request(t.http).get(path);
      expect([path, moved.status, moved.headers.location]).toEqual([path, 301, './']);
    }
    // A doubled slash would be served swagger-ui-dist's own demo page: it is sent, relatively
    // (a proxy's prefix stays), to the path without the empty segments, which is then served.
    for (const [path, location, resolved] of [
      ['/docs//', '../', '/docs/'],
      ['/docs///?x=1', '../../', '/docs/'],
      ['/docs//index.html', '../index.html', '/docs/index.html'],
      ['/docs/.//swagger-ui.css', '../swagger-ui.css', '/docs/swagger-ui.css'],
    ]) {
      const moved = await request(t.http).get(path);
      expect([path, moved.status, moved.headers.location, new URL(moved.headers.location, `http://h${path}`).pathname]).toEqual([path, 301, location, resolved]);
    }
    const stock = await request(t.http).get('/docs//');
    expect(stock.text).not.toContain('petstore');
    const contract = await request(t.http).get('/docs/openapi.json');
    expect(contract.status).toBe(200);
    expect(contract.body.openapi).toMatch(/^3\./);
    expect(Object.keys(contract.body.paths)).toEqual(expect.arrayContaining(['/health/live', '/health/ready']));
    expect(contract.body.components.securitySchemes['svc-api-key']).toEqual(
      expect.objectContaining({ type: 'apiKey', in: 'header', name: 'svc-api-key' }),
    );
  });

  it('serves at /docs/openapi.json, built when first asked for, the contract the code generates (openapi/openapi.json with the default settings)', async () => {
    const defaults = await startTestApp({ RATE_LIMIT_PER_MINUTE: '60', TOKEN_RATE_LIMIT_PER_MINUTE: '10' });
    try {
      const served = await request(defaults.http).get('/docs/openapi.json');
      expect(served.status).toBe(200);
      expect(served.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(served.body).toEqual(JSON.parse(readFileSync(new URL('../openapi/openapi.json', import.meta.url), 'utf8')));
      expect((await request(defaults.http).get('/docs/openapi.json')).text).toBe(served.text);
    } finally {
      await defaults.close();
    }
  });

  it('GET /health/ready is a 503 saying migrations are pending while they are, not that they failed', async () => {
    const pending = jest.spyOn(t.app.get(DataSource), 'showMigrations').mockResolvedValue(true);
    try {
      const res = await request(t.http).get('/health/ready');
      expect(res.status).toBe(503);
      expect(res.headers['retry-after']).toBe('5');
      expect(JSON.parse(res.text)).toMatchObject({ status: 503, detail: 'Not ready: migrations pending.' });
    } finally {
      pending.mockRestore();
    }
  });

  it("GET /health/ready says migrations are pending on a database without their table, and does not make it (a replica told not to migrate runs no DDL)", async () => {
    const db = t.app.get(DataSource);
    const exists = async (name: string): Promise<boolean> =>
      process.env.TEST_DATABASE === 'postgres'
        ? (await db.query<{ present: boolean }[]>(`SELECT to_regclass($1) IS NOT NULL AS present`, [name]))[0].present
        : (await db.query<unknown[]>(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`, [name])).length > 0;
    await db.query('ALTER TABLE migrations RENAME TO migrations_aside');
    try {
      const res = await request(t.http).get('/health/ready');
      expect(res.status).toBe(503);
      expect(JSON.parse(res.text)).toMatchObject({ status: 503, detail: 'Not ready: migrations pending.' });
      expect(await exists('migrations')).toBe(false);
    } finally {
      await db.query('ALTER TABLE migrations_aside RENAME TO migrations');
    }
    expect((await request(t.http).get('/health/ready')).status).toBe(200);
  });

  it('GET /health/ready asked by many at once checks the database once for all of them, so that it cannot be used to fill the pool', async () => {
    const db = t.app.get(DataSource);
    const real = db.showMigrations.bind(db);
    let checks = 0;
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const check = jest.spyOn(db, 'showMigrations').mockImplementation(async () => {
      checks++;
      await held;
      return real();
    });
    // The requests the server has read: from there to the check is no I/O, so a timer after the
    // last finds each of them waiting on the check under way, however slowly they connected.
    let received = 0;
    const server = t.http as unknown as Server;
    const counted = (): number => received++;
    server.on('request', counted);
    try {
      const answers = Array.from({ length: 40 }, () => request(t.http).get('/health/ready').then((res) => res.status));
      expect(await eventually(() => Promise.resolve(received), (n) => n === 40, 60_000, 10)).toBe(40);
      await new Promise((resolve) => setTimeout(resolve, 20));
      release();
      expect(await Promise.all(answers)).toEqual(Array.from({ length: 40 }, () => 200));
      expect(checks).toBe(1);
      // One asked after it checks again: nothing is kept past the check.
      expect((await request(t.http).get('/health/ready')).status).toBe(200);
      expect(checks).toBe(2);
    } finally {
      server.off('request', counted);
      check.mockRestore();
    }
  });

  it("GET /health/ready says a role without rights on the tables is that, not that migrations failed", async () => {
    const denied = Object.assign(new Error('permission denied for table migrations'), { code: '42501' });
    const refused = jest.spyOn(t.app.get(DataSource), 'showMigrations').mockRejectedValue(denied);
    try {
      const res = await request(t.http).get('/health/ready');
      expect(res.status).toBe(503);
      expect(JSON.parse(res.text)).toMatchObject({ status: 503, detail: "Not ready: the database role may not read the service's tables." });
    } finally {
      refused.mockRestore();
    }
  });

  it('GET /health/ready is a 503 problem with Retry-After when the database is gone', async () => {
    const db = t.app.get(DataSource);
    await db.destroy();
    try {
      const res = await request(t.http).get('/health/ready');
      expect(res.status).toBe(503);
      expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(res.headers['retry-after']).toBe('5');
      expect(JSON.parse(res.text)).toEqual({
        title: 'Service Unavailable',
        status: 503,
        detail: expect.stringMatching(/^Not ready: .*database.* failed\.$/),
        instance: expect.stringMatching(INSTANCE),
      });
    } finally {
      await db.initialize();
    }
    const after = await request(t.http).get('/health/ready');
    expect(after.status).toBe(200);
  });
});

describe(`the served contract of a service with its own limits (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({
      VISITS_TAKE_MAX: '50',
      VISITS_MAX_RANGE_DAYS: '1',
      CHANGES_RETENTION_DAYS: '30',
      IMAGE_MAX_BYTES: '2048',
      RATE_LIMIT_PER_MINUTE: '600',
      TOKEN_RATE_LIMIT_PER_MINUTE: '30',
    });
  });
  afterAll(async () => {
    await t.close();
  });

  it('gives those limits in its text as in its schemas, not the defaults', async () => {
    const res = await request(t.http).get('/docs/openapi.json');
    expect(res.status).toBe(200);
    const text = res.text;
    for (const figure of ['at most 31 days', 'CHANGES_RETENTION_DAYS (90)', 'at most 1000 (configurable)', '500 when omitted', '5242880 bytes']) expect(text).not.toContain(figure);
    const changes = (res.body as { paths: Record<string, { get: { parameters: { name: string; description: string; schema: { maximum?: number } }[] } }> }).paths['/visits/standard/changes'].get.parameters;
    const take = changes.find((p) => p.name === 'Take')!;
    expect([take.description, take.schema.maximum]).toEqual(['Changed visits to return, at most 50 (configurable); 50 when omitted.', 50]);
    expect(changes.find((p) => p.name === 'Since')!.description).toContain('At most CHANGES_RETENTION_DAYS (30) days ago.');
    // Swagger UI fills a Take in from its example: never one the service would refuse.
    const paths = (res.body as { paths: Record<string, { get?: { parameters?: { name: string; schema: { example?: number; maximum?: number } }[] } }> }).paths;
    const takes = Object.values(paths).flatMap((item) => (item.get?.parameters ?? []).filter((p) => p.name === 'Take'));
    expect(takes).toHaveLength(4);
    for (const { schema } of takes) expect(schema.example).toBeLessThanOrEqual(50);
    expect(text).toContain('The image must be at most 2048 bytes (2 KiB).');
  });

  it('gives those limits in its RateLimit headers and its 429 examples, as the service answers with them', async () => {
    const res = await request(t.http).get('/docs/openapi.json');
    expect(res.status).toBe(200);
    const text = res.text;
    // The defaults' figures, which a deployment with other limits does not apply.
    for (const figure of ['q=60;', 'q=10;', 'r=59;', '60 requests a minute']) expect(text).not.toContain(figure);
    const headers = (res.body as { components: { headers: Record<string, { description: string; schema: { example: unknown } }> } }).components.headers;
    expect(headers['RateLimit-Policy'].description).toContain('`"default";q=600;w=60` per API key, `"token";q=30;w=60` per client id');
    expect([headers['RateLimit-Policy'].schema.example, headers.RateLimit.schema.example]).toEqual(['"default";q=600;w=60', '"default";r=599;t=42']);
    expect([headers['X-Rate-Limit-Limit'].schema.example, headers['X-Rate-Limit-Remaining'].schema.example]).toEqual([600, 599]);
    expect(text).toContain('The rate limit of 600 requests a minute is reached; retry after 42 seconds.');
    // What a request is answered with says the same limit (one without a key counts by its address).
    const answer = await request(t.http).get('/branches?SvcClientId=1001');
    expect([answer.status, answer.headers['ratelimit-policy'], answer.headers['x-rate-limit-limit']]).toEqual([401, '"default";q=600;w=60', '600']);
  });

  it('says the range in the singular, as its refusals do', async () => {
    const res = await request(t.http).get('/docs/openapi.json');
    expect(res.status).toBe(200);
    expect(res.text).toContain('The range is at most 1 day (configurable).');
    expect(res.text).not.toContain('1 days');
  });
});
