import { seedClients } from './helpers/auth.js';
import { cli } from './helpers/cli.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

interface Listed {
  clientId: string;
  name: string;
  createdAt: string;
  keys: { prefix: string; createdAt: string }[];
}

/**
 * When a credential, its keys and its webhook endpoints were made, as `credentials add`, `keys
 * add`, `credentials list` and `webhooks list` show it: to the millisecond on both databases. SQLite's column default kept whole
 * seconds, so credentials made within one second were listed in the order of their random
 * client ids there, and in the order they were made on PostgreSQL.
 */
describe('credentials dated when they are made, the same on every database', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp();
    await seedClients(t);
  });
  afterAll(async () => {
    await t?.close();
  });

  it('lists credentials in the order they were made, each dated within its command, its keys too', async () => {
    const made: { clientId: string; prefix: string; before: number; after: number }[] = [];
    for (const name of ['first', 'second', 'third', 'fourth']) {
      const before = Date.now();
      const added = await cli(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read', '--name', name, '--json'], t.env);
      const after = Date.now();
      expect({ code: added.code, stderr: added.stderr }).toEqual({ code: 0, stderr: '' });
      const { clientId, apiKey } = JSON.parse(added.stdout) as { clientId: string; apiKey: string };
      made.push({ clientId, prefix: apiKey.slice(0, 12), before, after });
      // Apart by more than a millisecond, so that the order made is the order of the dates.
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    const keyBefore = Date.now();
    const key = await cli(['keys', 'add', made[0].clientId, '--json'], t.env);
    const keyAfter = Date.now();
    expect({ code: key.code, stderr: key.stderr }).toEqual({ code: 0, stderr: '' });

    const listed = await cli(['credentials', 'list', '--json'], t.env);
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
    const credentials = JSON.parse(listed.stdout) as Listed[];
    expect(credentials.map((c) => c.name)).toEqual(['first', 'second', 'third', 'fourth']);
    credentials.forEach((c, i) => {
      const at = Date.parse(c.createdAt);
      expect({ clientId: c.clientId, inCommand: at >= made[i].before && at <= made[i].after }).toEqual({ clientId: made[i].clientId, inCommand: true });
      expect(c.keys[0].createdAt).toBe(c.createdAt);
    });
    const second = Date.parse(credentials[0].keys[1].createdAt);
    expect(credentials[0].keys).toHaveLength(2);
    expect(second >= keyBefore && second <= keyAfter).toBe(true);
  });

  it("lists a credential's webhook endpoints in the order they were added, each dated within its command", async () => {
    const added = await cli(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read', '--name', 'hooks', '--json'], t.env);
    const { clientId } = JSON.parse(added.stdout) as { clientId: string };
    const windows: { before: number; after: number }[] = [];
    for (const path of ['c', 'a', 'b']) {
      const before = Date.now();
      const hook = await cli(['webhooks', 'add', clientId, '--url', `https://127.0.0.1/${path}`, '--allow-private', '--json'], t.env);
      windows.push({ before, after: Date.now() });
      expect({ code: hook.code, stderr: hook.stderr }).toEqual({ code: 0, stderr: '' });
      await new Promise((resolve) => setTimeout(resolve, 3));
    }
    const listed = await cli(['webhooks', 'list', '--json'], t.env);
    expect({ code: listed.code, stderr: listed.stderr }).toEqual({ code: 0, stderr: '' });
    const endpoints = (JSON.parse(listed.stdout) as { url: string; createdAt: string }[]).filter((e) => e.url.startsWith('https://127.0.0.1/'));
    expect(endpoints.map((e) => e.url)).toEqual(['https://127.0.0.1/c', 'https://127.0.0.1/a', 'https://127.0.0.1/b']);
    endpoints.forEach((e, i) => {
      const at = Date.parse(e.createdAt);
      expect({ url: e.url, inCommand: at >= windows[i].before && at <= windows[i].after }).toEqual({ url: e.url, inCommand: true });
    });
  });
});
