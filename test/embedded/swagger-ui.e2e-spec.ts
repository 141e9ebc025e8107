import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { addDays, localDate } from '../../src/common/clock.js';
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

/**
 * QA's path through Swagger UI in a real browser: authorize with the API key and the OAuth2
 * client-credentials flow from the dialog, then "Try it out" on GET /visits/standard and
 * GET /branches; the authorization survives a reload.
 */
describe('Swagger UI in Chromium', () => {
  let service: ServiceProcess;
  let browser: Browser;
  let page: Page;
  let demo: DemoCredential;
  let docs: string;

  beforeAll(async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-swagger-'));
    // The page and the token endpoint on one origin, as PUBLIC_BASE_URL makes them in production.
    const port = await freePort();
    service = await startService({ DATA_DIR: dataDir, PORT: String(port), PUBLIC_BASE_URL: `http://localhost:${port}` });
    docs = `http://localhost:${port}/docs`;
    demo = (JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as { credentials: DemoCredential[] }).credentials[0]!;
    browser = await chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS });
    page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
    mkdirSync(OUTPUT, { recursive: true });
  });
  afterAll(async () => {
    await browser?.close();
    await service?.stop();
  });

  async function tryItOut(operationId: string, params: Record<string, string>): Promise<{ status: string; body: string }> {
    const block = page.locator(`.opblock[id$="-${operationId}"]`);
    await block.waitFor();
    if (!(await block.getAttribute('class'))?.includes('is-open')) await block.locator('.opblock-summary').first().click();
    const tryButton = block.locator('button.try-out__btn');
    if ((await tryButton.textContent())?.includes('Try it out')) await tryButton.click();
    for (const [name, value] of Object.entries(params)) {
      await block.locator(`tr[data-param-name="${name}"] input`).fill(value);
    }
    await block.locator('button.execute').click();
    const status = block.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 20_000 });
    const body = await block.locator('.live-responses-table .response .response-col_description pre').first().innerText();
    return { status: (await status.innerText()).trim(), body };
  }

  it('authorizes with the API key and the client-credentials flow from the dialog', async () => {
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
  });

  it('executes GET /visits/standard and shows a 200 with visits', async () => {
    const today = localDate('Europe/London');
    const { status, body } = await tryItOut('getStandardVisits', {
      SvcClientId: '1001',
      FromDate: addDays(today, -7),
      ToDate: addDays(today, -1),
      Skip: '0',
      Take: '5',
    });
    expect(status).toBe('200');
    const visits = (JSON.parse(body) as { data: { visits: { visitId: number; clientId: number; visitType: string }[] } }).data.visits;
    expect(visits).toHaveLength(5);
    expect(visits.every((v) => v.clientId === 1001)).toBe(true);
    // Optional filters start empty: "Try it out" must not narrow the query on its own.
    expect(await page.locator('.opblock[id$="-getStandardVisits"] tr[data-param-name="SvcBrandId"] input').inputValue()).toBe('');
    expect(await page.locator('.opblock[id$="-getStandardVisits"] tr[data-param-name="VisitTypes"] input').inputValue()).toBe('');
    await page.screenshot({ path: join(OUTPUT, 'swagger-ui-visits.png'), fullPage: false });
  });

  it('executes GET /branches and shows a 200 with branches', async () => {
    const { status, body } = await tryItOut('listBranches', { SvcClientId: '1001' });
    expect(status).toBe('200');
    const branches = JSON.parse(body) as { id: string; branchCode: string | null }[];
    expect(branches.length).toBeGreaterThan(10);
    expect(branches[0]).toEqual({ id: expect.stringMatching(/^BR-1001-/), name: expect.any(String), branchCode: expect.any(String) });
  });

  it('keeps the authorization across a reload', async () => {
    await page.reload();
    const { status } = await tryItOut('listBranches', { SvcClientId: '1001' });
    expect(status).toBe('200');
    await page.screenshot({ path: join(OUTPUT, 'swagger-ui-after-reload.png') });
  });
});
