import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { networkInterfaces, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Locator, type Page, type Request } from 'playwright-core';
import { addDays, localDate } from '../../src/common/clock.js';
import { makeImage } from '../helpers/images.js';
import { freePort } from '../helpers/listen.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';

/** Flags for a headless Chromium on a machine without a network beyond loopback. */
const CHROMIUM_ARGS = [
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];
const OUTPUT = resolve('test-output');

interface DemoCredential {
  clientId: string;
  clientSecret: string;
  apiKey: string;
}

let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
  mkdirSync(OUTPUT, { recursive: true });
});
afterAll(async () => {
  await browser?.close();
});

/** The file's demo database: its first service seeds it, the next (started once the first stopped) reuses it. */
let dataDir: string | undefined;

/** Starts the built service with demo data; returns it and the first demo credential. */
async function startDemoService(env: (port: number) => Record<string, string>): Promise<{ service: ServiceProcess; demo: DemoCredential; port: number }> {
  dataDir ??= mkdtempSync(join(tmpdir(), 'results-swagger-'));
  const port = await freePort();
  const service = await startService({ DATA_DIR: dataDir, PORT: String(port), ...env(port) });
  const demo = (JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as { credentials: DemoCredential[] }).credentials[0];
  return { service, demo, port };
}

/** Opens an operation, fills its parameters and executes it; gives its block and the status shown. */
async function execute(page: Page, operationId: string, params: Record<string, string>): Promise<{ block: Locator; status: string }> {
  const block = page.locator(`.opblock[id$="-${operationId}"]`);
  await block.waitFor();
  if (!(await block.getAttribute('class'))?.includes('is-open')) await block.locator('.opblock-summary').first().click();
  const tryButton = block.locator('button.try-out__btn');
  if ((await tryButton.textContent())?.includes('Try it out')) await tryButton.click();
  for (const [name, value] of Object.entries(params)) {
    await block.locator(`tr[data-param-name="${name}"] input`).fill(value);
  }
  // The answer of an earlier execution would be read for this one's.
  const clear = block.locator('button.btn-clear');
  if ((await clear.count()) > 0) await clear.click();
  await block.locator('button.execute').click();
  const status = block.locator('.live-responses-table .response .response-col_status').first();
  // Generous: a 1000-visit body takes Swagger UI seconds to lay out on a busy machine.
  await status.waitFor({ timeout: 90_000 });
  return { block, status: (await status.innerText()).trim() };
}

/** "Try it out" on an operation whose answer Swagger UI shows as text. */
async function tryItOut(page: Page, operationId: string, params: Record<string, string>): Promise<{ status: string; body: string }> {
  const { block, status } = await execute(page, operationId, params);
  const body = await block.locator('.live-responses-table .response .response-col_description pre').first().innerText();
  return { status, body };
}

/**
 * Opens the docs page and authorizes from the dialog: the API key, then the OAuth2
 * client-credentials flow. Returns the token request Swagger UI sent.
 */
async function authorize(page: Page, docs: string, demo: DemoCredential): Promise<Request> {
  const tokenRequest = page.waitForRequest((r) => r.url().endsWith('/connect/token'));
  await page.goto(docs);
  await page.click('.btn.authorize');
  await page.fill('#api_key_value', demo.apiKey);
  await page.click('button[aria-label="Apply credentials"]');
  await page.fill('#client_id_clientCredentials', demo.clientId);
  await page.fill('#client_secret_clientCredentials', demo.clientSecret);
  await page.click('button[aria-label="Apply given OAuth2 credentials"]');
  const request = await tokenRequest;
  expect(request.headers()['svc-api-key']).toBe(demo.apiKey);
  expect((await request.response())?.status()).toBe(200);
  await page.locator('.modal-ux-content h6:has-text("Authorized")').nth(1).waitFor();
  expect(await page.locator('.modal-ux-content').innerText()).toMatch(/oauth2 \(OAuth2, clientCredentials\)[\s\S]*Authorized/);
  await page.locator('.modal-ux .close-modal').click();
  return request;
}

/** The demo client's visits of the last `days` days (a week by default), from the "Try it out" of GET /visits/standard. */
async function tryStandardVisits(page: Page, { days = 7, take = 5 } = {}): Promise<{ status: string; visits: { clientId: number }[] }> {
  const today = localDate('Europe/London');
  const { status, body } = await tryItOut(page, 'getStandardVisits', {
    SvcClientId: '1001',
    FromDate: addDays(today, -days),
    ToDate: addDays(today, -1),
    Skip: '0',
    Take: String(take),
  });
  return { status, visits: status === '200' ? (JSON.parse(body) as { data: { visits: { clientId: number }[] } }).data.visits : [] };
}

/**
 * QA's path through Swagger UI in a real browser: authorize with the API key and the OAuth2
 * client-credentials flow from the dialog, then "Try it out" on GET /visits/standard and
 * GET /branches; the authorization survives a reload.
 */
describe('Swagger UI in Chromium', () => {
  let service: ServiceProcess;
  let page: Page;
  let demo: DemoCredential;
  let docs: string;

  beforeAll(async () => {
    // The page and the token endpoint on one origin, as PUBLIC_BASE_URL makes them in production.
    let port: number;
    ({ service, demo, port } = await startDemoService((at) => ({ PUBLIC_BASE_URL: `http://localhost:${at}` })));
    docs = `http://localhost:${port}/docs`;
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  });
  afterAll(async () => {
    await page?.close();
    await service?.stop();
  });

  it('authorizes with the API key and the client-credentials flow from the dialog', async () => {
    await authorize(page, docs, demo);
  });

  it('executes GET /visits/standard and shows a 200 with visits', async () => {
    const { status, visits } = await tryStandardVisits(page);
    expect(status).toBe('200');
    expect(visits).toHaveLength(5);
    expect(visits.every((v) => v.clientId === 1001)).toBe(true);
    // Optional filters start empty: "Try it out" must not narrow the query on its own.
    expect(await page.locator('.opblock[id$="-getStandardVisits"] tr[data-param-name="SvcBrandId"] input').inputValue()).toBe('');
    expect(await page.locator('.opblock[id$="-getStandardVisits"] tr[data-param-name="VisitTypes"] input').inputValue()).toBe('');
    await page.screenshot({ path: join(OUTPUT, 'swagger-ui-visits.png'), fullPage: false });
  });

  it('shows a Take=1000 page of a month of visits (highlighting such a body held the page for a minute, then failed to show it)', async () => {
    const { status, visits } = await tryStandardVisits(page, { days: 31, take: 1000 });
    expect(status).toBe('200');
    // The demo has some 850 visits a month: the whole month, megabytes of JSON.
    expect(visits.length).toBeGreaterThan(500);
    expect(await page.locator('.opblock[id$="-getStandardVisits"]').innerText()).not.toContain('Could not render');
  });

  it('executes GET /branches and shows a 200 with branches', async () => {
    const { status, body } = await tryItOut(page, 'listBranches', { SvcClientId: '1001' });
    expect(status).toBe('200');
    const branches = JSON.parse(body) as { id: string; branchCode: string | null }[];
    expect(branches.length).toBeGreaterThan(10);
    expect(branches[0]).toEqual({ id: expect.stringMatching(/^BR-1001-/), name: expect.any(String), branchCode: expect.any(String) });
  });

  it("shows a dish's image from GET /menus/dishes/images/{imageId}: the page's CSP lets Swagger UI draw it", async () => {
    const refused: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error') refused.push(message.text());
    });
    const { status, body } = await tryItOut(page, 'listDishes', { SvcClientId: '1001', menuId: '101' });
    expect(status).toBe('200');
    const url = (JSON.parse(body) as { data: { dishes: { image: { url: string } | null }[] } }).data.dishes.find((d) => d.image)?.image?.url;
    const imageId = /\/menus\/dishes\/images\/([0-9a-f-]{36})/.exec(url ?? '')?.[1];
    expect(imageId).toBeDefined();
    // The answer is drawn as an image, not shown as text.
    const { block, status: imageStatus } = await execute(page, 'getDishImage', { SvcClientId: '1001', imageId: imageId! });
    expect(imageStatus).toBe('200');
    const drawn = block.locator('.live-responses-table img').first();
    await drawn.waitFor();
    // Drawn from a blob: URL; under a CSP without blob: the image stays empty (0 pixels wide) and the console says why.
    const drawnWidth = await page
      .waitForFunction((img) => (img as { naturalWidth: number }).naturalWidth, await drawn.elementHandle(), { timeout: 10_000 })
      .then((width) => width.jsonValue())
      .catch(() => 0);
    expect({ src: (await drawn.getAttribute('src'))?.slice(0, 5), drawn: drawnWidth > 0, refused }).toEqual({ src: 'blob:', drawn: true, refused: [] });
    await page.screenshot({ path: join(OUTPUT, 'swagger-ui-dish-image.png') });
  });

  it('keeps the authorization across a reload', async () => {
    await page.reload();
    const { status } = await tryItOut(page, 'listBranches', { SvcClientId: '1001' });
    expect(status).toBe('200');
    await page.screenshot({ path: join(OUTPUT, 'swagger-ui-after-reload.png') });
  });
});

/**
 * An address of this machine that Chromium does not count as localhost, so the page is not a
 * "potentially trustworthy" origin there: a CSP upgrade-insecure-requests is applied, and the
 * origin differs from the localhost one a contract might name. Preferred: a non-loopback IPv4
 * address of an interface (what QA opens, the machine's or the pod's address). Without one:
 * the IPv4-mapped IPv6 form of the loopback alias 127.0.0.2. Chromium treats every address of
 * 127.0.0.0/8 (127.0.0.2 included) and ::1 as localhost (a secure context; nothing is upgraded),
 * so none of those would show the defect; `[::ffff:127.0.0.2]` reaches the same IPv4 listener
 * through the loopback interface, and Chromium treats it as an ordinary remote address (not a
 * secure context: checked below, so the test fails loudly if a Chromium changes that).
 */
function nonLocalhostAddress(): string {
  const ipv4 = Object.values(networkInterfaces())
    .flat()
    .find((address) => address !== undefined && address.family === 'IPv4' && !address.internal);
  return ipv4 ? ipv4.address : '[::ffff:127.0.0.2]';
}

/**
 * QA opens the docs at the service's own address over plain http (no PUBLIC_BASE_URL), and
 * at 127.0.0.1: the page must load its scripts over http, authorize against the host it was
 * opened at, and run "Try it out" there.
 */
describe('Swagger UI at an address other than localhost', () => {
  let service: ServiceProcess;
  let demo: DemoCredential;
  let port: number;
  const address = nonLocalhostAddress();

  beforeAll(async () => {
    ({ service, demo, port } = await startDemoService(() => ({ HOST: '0.0.0.0' })));
  });
  afterAll(async () => {
    await service?.stop();
  });

  it(`loads over plain http at ${address}, authorizes and executes GET /visits/standard with a 200`, async () => {
    const origin = `http://${address}:${port}`;
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    const failed: string[] = [];
    const requested: string[] = [];
    page.on('requestfailed', (r) => failed.push(`${r.url()} ${r.failure()?.errorText ?? ''}`));
    page.on('request', (r) => requested.push(r.url()));
    try {
      const tokenRequest = await authorize(page, `${origin}/docs`, demo);
      expect(await page.evaluate('window.isSecureContext')).toBe(false);
      expect(new URL(tokenRequest.url()).origin).toBe(new URL(origin).origin);
      const { status, visits } = await tryStandardVisits(page);
      expect(status).toBe('200');
      expect(visits).toHaveLength(5);
      expect(visits.every((v) => v.clientId === 1001)).toBe(true);
      expect(failed).toEqual([]);
      expect(requested.filter((url) => !url.startsWith(`${new URL(origin).origin}/`))).toEqual([]);
      await page.screenshot({ path: join(OUTPUT, 'swagger-ui-non-localhost.png') });
    } finally {
      await page.close();
    }
  });

  it('authorizes at 127.0.0.1 against 127.0.0.1', async () => {
    const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    try {
      const tokenRequest = await authorize(page, `http://127.0.0.1:${port}/docs`, demo);
      expect(tokenRequest.url()).toBe(`http://127.0.0.1:${port}/connect/token`);
      const { status } = await tryStandardVisits(page);
      expect(status).toBe('200');
    } finally {
      await page.close();
    }
  });
});

/**
 * QA exercises every operation from Swagger UI, not only the reads above: a dish uploaded with
 * the file chooser and the JSON text, the menus and dishes paged with the `after` token a page
 * gave, the plus variant, the change feed, the token endpoint's own "Try it out", and a 400
 * shown as the problem body. Pages of one, so that the demo client's
 * two menus take two pages.
 */
describe('Swagger UI: the other operations', () => {
  let service: ServiceProcess;
  let page: Page;
  let demo: DemoCredential;

  beforeAll(async () => {
    let port: number;
    ({ service, demo, port } = await startDemoService((at) => ({ PUBLIC_BASE_URL: `http://localhost:${at}`, MENUS_PAGE_SIZE: '1' })));
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    await authorize(page, `http://localhost:${port}/docs`, demo);
  });
  afterAll(async () => {
    await page?.close();
    await service?.stop();
  });

  it('pages GET /menus with the after token the first page gave', async () => {
    const first = await tryItOut(page, 'listMenus', { SvcClientId: '1001' });
    expect(first.status).toBe('200');
    const one = JSON.parse(first.body) as { data: { menus: { id: number }[] }; paging?: { after?: string } };
    expect(one.data.menus).toHaveLength(1);
    expect(one.paging?.after).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
    const second = await tryItOut(page, 'listMenus', { SvcClientId: '1001', after: one.paging!.after! });
    expect(second.status).toBe('200');
    const two = JSON.parse(second.body) as { data: { menus: { id: number }[] }; paging: { after?: string } };
    expect(two.data.menus).toHaveLength(1);
    expect(two.data.menus[0].id).not.toBe(one.data.menus[0].id);
    expect(two.paging.after).toBeUndefined();
  });

  it('uploads a dish from the file chooser and the JSON text, then finds it on GET /menus/dishes', async () => {
    const block = page.locator('.opblock[id$="-upsertDish"]');
    await block.waitFor();
    await block.locator('.opblock-summary').first().click();
    await block.locator('button.try-out__btn').click();
    await block.locator('tr[data-param-name="SvcClientId"] input').fill('1001');
    await block.locator('tr[data-property-name="file"] input[type="file"]').setInputFiles({ name: 'plate.png', mimeType: 'image/png', buffer: await makeImage('png', 40, 30) });
    const dish = { menuId: 101, code: 'QA-SWAGGER-01', description: 'Tried from the docs', type: 'Main', order: 7, keywords: ['qa'] };
    await block.locator('tr[data-property-name="json"] :is(input, textarea)').first().fill(JSON.stringify(dish));
    const upload = page.waitForRequest((r) => r.method() === 'POST' && new URL(r.url()).pathname === '/menus/dishes');
    await block.locator('button.execute').click();
    const request = await upload;
    expect(request.headers()['content-type']).toMatch(/^multipart\/form-data; boundary=/);
    expect((await request.response())?.status()).toBe(200);
    const status = block.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 90_000 });
    expect((await status.innerText()).trim()).toBe('200');
    const body = JSON.parse(await block.locator('.live-responses-table .response .response-col_description pre').first().innerText()) as {
      data: { dish: { code: string; order: number; keywords: string[]; image: { contentType: string; width: number; height: number } } };
    };
    expect(body.data.dish).toMatchObject({ code: dish.code, order: 7, keywords: ['qa'], image: { contentType: 'image/png', width: 40, height: 30 } });

    const found: { code: string }[] = [];
    let after: string | undefined;
    for (let pages = 0; pages < 100 && !found.some((d) => d.code === dish.code); pages++) {
      const listed = await tryItOut(page, 'listDishes', { SvcClientId: '1001', menuId: '101', after: after ?? '' });
      expect(listed.status).toBe('200');
      const answer = JSON.parse(listed.body) as { data: { dishes: { code: string }[] }; paging?: { after?: string } };
      found.push(...answer.data.dishes);
      after = answer.paging?.after;
      if (after === undefined) break;
    }
    expect(found.filter((d) => d.code === dish.code)).toHaveLength(1);
  });

  it('executes GET /visits/plus and GET /visits/plus/changes', async () => {
    const today = localDate('Europe/London');
    const plus = await tryItOut(page, 'getPlusVisits', { SvcClientId: '1001', FromDate: addDays(today, -7), ToDate: addDays(today, -1), Skip: '0', Take: '3' });
    expect(plus.status).toBe('200');
    const visits = (JSON.parse(plus.body) as { data: { visits: Record<string, unknown>[] } }).data.visits;
    expect(visits).toHaveLength(3);
    expect(visits.every((v) => 'optIns' in v && 'guestId' in v)).toBe(true);
    const feed = await tryItOut(page, 'getPlusVisitChanges', { SvcClientId: '1001', Since: `${addDays(today, -2)}T00:00:00Z`, Take: '2' });
    expect(feed.status).toBe('200');
    const changes = JSON.parse(feed.body) as { data: { visits: unknown[] }; paging: { after: string } };
    expect(changes.data.visits).toHaveLength(2);
    expect(changes.paging.after).toMatch(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/);
  });

  it('shows a refused query as the problem body, every broken rule in it', async () => {
    const today = localDate('Europe/London');
    const { status, body } = await tryItOut(page, 'getStandardVisits', { SvcClientId: '1001', FromDate: addDays(today, -1), ToDate: addDays(today, -3), Skip: '0', Take: '5' });
    expect(status).toBe('400');
    expect(JSON.parse(body)).toEqual({
      title: 'Bad Request',
      status: 400,
      detail: expect.any(String),
      instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
      errors: ["'ToDate' must be greater than or equal to 'FromDate'."],
    });
  });

  it('executes POST /connect/token from its own form and shows the token', async () => {
    const block = page.locator('.opblock[id$="-createToken"]');
    await block.waitFor();
    await block.locator('.opblock-summary').first().click();
    await block.locator('button.try-out__btn').click();
    for (const [name, value] of Object.entries({ grant_type: 'client_credentials', client_id: demo.clientId, client_secret: demo.clientSecret })) {
      const field = block.locator(`tr[data-property-name="${name}"]`);
      const choice = field.locator('select');
      if ((await choice.count()) > 0) await choice.selectOption(value);
      else await field.locator('input:not([type="checkbox"])').fill(value);
    }
    await block.locator('button.execute').click();
    const status = block.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 90_000 });
    expect((await status.innerText()).trim()).toBe('200');
    const token = JSON.parse(await block.locator('.live-responses-table .response .response-col_description pre').first().innerText()) as Record<string, unknown>;
    expect(token).toEqual({ access_token: expect.stringMatching(/^ey/), expires_in: 3600, token_type: 'Bearer', scope: expect.stringContaining('svc-results-api') });
  });
});
