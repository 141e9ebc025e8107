import { readFileSync } from 'node:fs';
import request from 'supertest';
import { uploadDish, type UploadOptions } from '../examples/upload-dish.js';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays, localDate } from '../src/common/clock.js';
import { Menu } from '../src/menus/entities/menu.entity.js';
import { MenusRepository } from '../src/menus/menus.repository.js';
import { issueCredential, seedClients, tokenFor } from './helpers/auth.js';
import { makeImage } from './helpers/images.js';
import { startListeningTestApp, type TestApp } from './helpers/test-app.js';

/**
 * The README's upload script (examples/upload-dish.ts, on the generated client): the dish and
 * its image go up as the form the contract describes, and the image comes back byte for byte.
 */
describe(`the partner upload script of the README (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let base: string;
  let partner: IssuedCredential;

  beforeAll(async () => {
    ({ t, base } = await startListeningTestApp());
    await seedClients(t);
    const start = addDays(localDate(t.config.RESULTS_TIMEZONE), -10);
    await t.app.get(MenusRepository).saveMenus([{ menu: Object.assign(new Menu(), { id: 101, clientId: 1001, name: 'Dinner', startDate: start, endDate: null }), dishes: [] }]);
    partner = await issueCredential(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('adds the dish with its image, then replaces it whole, and reads back the stored bytes each time', async () => {
    const options = (image: Buffer, dish: UploadOptions['dish']): UploadOptions => ({
      baseUrl: base,
      apiKey: partner.apiKey,
      clientId: partner.clientId,
      clientSecret: partner.clientSecret,
      svcClientId: 1001,
      dish,
      image,
      imageType: 'image/png',
    });
    const first = await makeImage('png', 40, 30);
    const added = await uploadDish(options(first, { menuId: 101, code: 'AG-STK-03', description: 'Ribeye steak, 10oz', type: 'Main', order: 4, keywords: ['beef'] }));
    expect(added.dish).toMatchObject({ menuId: 101, code: 'AG-STK-03', description: 'Ribeye steak, 10oz', type: 'Main', order: 4, keywords: ['beef'], expiryDate: null });
    expect(added.dish.image).toMatchObject({ contentType: 'image/png', bytes: first.length, width: 40, height: 30 });
    // A PNG without metadata is stored byte for byte.
    expect(Buffer.from(added.image).equals(first)).toBe(true);

    const second = await makeImage('png', 20, 10, '#2e86c1');
    const replaced = await uploadDish(options(second, { menuId: 101, code: 'AG-STK-03', description: 'Ribeye', type: 'Main' }));
    expect(replaced.dish).toMatchObject({ id: added.dish.id, description: 'Ribeye', order: null, keywords: [] });
    expect(replaced.dish.image!.url).not.toBe(added.dish.image!.url);
    expect(Buffer.from(replaced.image).equals(second)).toBe(true);

    // What the service lists is what the script was answered.
    const token = await tokenFor(t.http, partner);
    const listed = await request(t.http).get('/menus/dishes?SvcClientId=1001&menuId=101').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    expect(listed.status).toBe(200);
    expect((listed.body as { data: { dishes: unknown[] } }).data.dishes).toEqual([replaced.dish]);
  });

  it('says what the service refused', async () => {
    const image = await makeImage('png');
    const refused = uploadDish({
      baseUrl: base,
      apiKey: partner.apiKey,
      clientId: partner.clientId,
      clientSecret: partner.clientSecret,
      svcClientId: 1001,
      dish: { menuId: 101, code: 'X'.repeat(51), description: 'X', type: 'Main' },
      image,
      imageType: 'image/png',
    });
    // The status and the problem as the service gave them: the rule the dish broke.
    await expect(refused).rejects.toThrow(/^upload failed: 400 \{"title":"Bad Request","status":400,.*"errors":\["'code' must be at most 50 characters\."\]\}$/);
  });
});

describe('the README', () => {
  it('shows the upload script exactly as examples/upload-dish.ts has it, types imported from the generated file', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const script = readFileSync(new URL('../examples/upload-dish.ts', import.meta.url), 'utf8');
    expect(readme).toContain(`\`\`\`ts\n${script.replace("'../test/generated/results-api.js'", "'./results-api.js'")}\`\`\``);
  });
});
