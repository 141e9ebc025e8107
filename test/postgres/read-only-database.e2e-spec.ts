import type { NestExpressApplication } from '@nestjs/platform-express';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import type { App } from 'supertest/types.js';
import { AppModule } from '../../src/app.module.js';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { loadConfig } from '../../src/config/app-config.js';
import { Menu } from '../../src/menus/entities/menu.entity.js';
import { MenusRepository } from '../../src/menus/menus.repository.js';
import { setupApp } from '../../src/setup-app.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { makeImage } from '../helpers/images.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * A database that takes reads but refuses writes: a standby during a failover (the service's
 * address not yet moved to the new primary), or one made read-only for maintenance. Reads go
 * on; a write is a 503 the partner retries, not a 500.
 */
describe('a PostgreSQL database that refuses writes (postgres)', () => {
  let t: TestApp;
  let readOnly: NestExpressApplication;
  let http: App;
  let partner: IssuedCredential;

  beforeAll(async () => {
    t = await startTestApp();
    await seedClients(t);
    await t.app.get(MenusRepository).saveMenus([{ menu: Object.assign(new Menu(), { id: 101, clientId: 1001, name: 'Dinner', startDate: '2026-01-01', endDate: null }), dishes: [] }]);
    partner = await issueCredential(t);
    const url = new URL(t.config.DATABASE_URL!);
    url.searchParams.set('options', '-c default_transaction_read_only=on');
    const config = loadConfig({ ...t.env, DATABASE_URL: url.toString() });
    const moduleRef = await Test.createTestingModule({ imports: [AppModule.forRoot(config)] }).compile();
    readOnly = moduleRef.createNestApplication<NestExpressApplication>({ bufferLogs: true });
    setupApp(readOnly);
    await readOnly.init();
    http = readOnly.getHttpServer();
  });
  afterAll(async () => {
    await readOnly.close();
    await t.close();
  });

  it('answers reads, and a write with a 503 to retry in seconds, where it was a 500', async () => {
    const token = await tokenFor(http, partner);
    const branches = await request(http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
    expect(branches.status).toBe(200);
    const upload = await request(http)
      .post('/menus/dishes?SvcClientId=1001')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Bearer ${token}`)
      .attach('file', await makeImage('png'), { filename: 'dish.png', contentType: 'image/png' })
      .field('json', JSON.stringify({ menuId: 101, code: 'RO-1', description: 'Read only', type: 'Main' }));
    expect({ status: upload.status, retryAfter: upload.headers['retry-after'], body: JSON.parse(upload.text) as unknown }).toEqual({
      status: 503,
      retryAfter: '5',
      body: expect.objectContaining({ status: 503, detail: 'The database is unavailable; retry after the time in Retry-After.' }) as unknown,
    });
  });
});
