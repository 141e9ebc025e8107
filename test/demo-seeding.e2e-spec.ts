import { mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import { DataSource } from 'typeorm';
import { CredentialsService } from '../src/auth/credentials.service.js';
import { ClientsService } from '../src/clients/clients.service.js';
import { DemoService } from '../src/demo/demo.service.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

/**
 * Replicas that start together on one empty database (SEED_DEMO=true, the default) seed the
 * demo once: each looks for a client and loads the demo if it finds none, and without a lock
 * both would find none and both load it (two sets of demo credentials, the first disabled).
 */
describe(`the demo seeding of an empty database by two processes at once (${process.env.TEST_DATABASE})`, () => {
  let first: TestApp;
  let second: TestApp;

  beforeAll(async () => {
    // A week of demo visits: what is tested is who loads them, not how many there are.
    first = await startTestApp({ DEMO_DAYS: '7' });
    // The same database (SQLite file or PostgreSQL schema) and the same DATA_DIR, as replicas share them.
    second = await startTestApp({ DEMO_DAYS: '7', DATA_DIR: first.env.DATA_DIR, ...(first.env.DATABASE_SCHEMA ? { DATABASE_SCHEMA: first.env.DATABASE_SCHEMA } : {}) });
  });
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  it('is done by one of them; the other finds its clients and writes nothing', async () => {
    const seeded = await Promise.all([first.app.get(DemoService).seedIfEmpty(), second.app.get(DemoService).seedIfEmpty()]);
    expect(seeded.sort()).toEqual([false, true]);

    const db = first.app.get(DataSource);
    const count = async (table: string): Promise<number> => Number((await db.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n);
    expect(await count('clients')).toBe(2);
    // One set of demo credentials, both in the file and both usable.
    expect(await count('credentials')).toBe(2);
    const file = (await first.app.get(DemoService).readCredentials())!;
    expect(file.credentials).toHaveLength(2);
    const rows = await db.query<{ client_id: string; disabled: boolean | number }[]>('SELECT client_id, disabled FROM credentials');
    expect(rows.map((r) => r.client_id).sort()).toEqual(file.credentials.map((c) => c.clientId).sort());
    expect(rows.map((r) => Boolean(r.disabled))).toEqual([false, false]);
    // Every demo visit once: as many as one load writes.
    const visits = await count('visits');
    expect(visits).toBeGreaterThan(100);
    expect(await second.app.get(DemoService).seedIfEmpty()).toBe(false);
    expect(await count('visits')).toBe(visits);
  });

  it('seeds again a database whose seeding stopped while it issued the credentials, and its file then names credentials that work', async () => {
    const db = first.app.get(DataSource);
    const demo = first.app.get(DemoService);
    const credentials = first.app.get(CredentialsService);
    const count = async (table: string): Promise<number> => Number((await db.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n);
    /** The file's credentials are the database's, and each gets a token. */
    const fileWorks = async (): Promise<void> => {
      const file = (await demo.readCredentials())!;
      expect(file.credentials).toHaveLength(2);
      const rows = await db.query<{ client_id: string }[]>('SELECT client_id FROM credentials');
      expect(rows.map((r) => r.client_id).sort()).toEqual(file.credentials.map((c) => c.clientId).sort());
      for (const c of file.credentials) expect(await credentials.whyUnusable(c)).toBeNull();
    };
    // What a seeding stopped before its credentials leaves (see the next test).
    const beforeCredentials = async (): Promise<void> => {
      await db.query('DELETE FROM api_keys');
      await db.query('DELETE FROM credentials');
      rmSync(demo.credentialsPath, { recursive: true, force: true });
    };

    // Stopped at the credentials file (the process killed while it was written, or a write
    // that failed): the secrets are kept nowhere, so no credential may be stored, or no later
    // start would seed the database again and none would show its credentials.
    await beforeCredentials();
    mkdirSync(demo.credentialsPath);
    writeFileSync(join(demo.credentialsPath, 'in-the-way'), '');
    await expect(demo.seedIfEmpty()).rejects.toThrow();
    expect(await count('credentials')).toBe(0);
    rmSync(demo.credentialsPath, { recursive: true, force: true });
    expect(await demo.seedIfEmpty()).toBe(true);
    await fileWorks();

    // Stopped after the file, before its credentials were stored: the file names credentials
    // the database does not hold, and the next start seeds again over it.
    await beforeCredentials();
    const stopped = jest.spyOn(credentials, 'store').mockRejectedValueOnce(new Error('the process stopped here'));
    await expect(demo.seedIfEmpty()).rejects.toThrow('the process stopped here');
    stopped.mockRestore();
    expect(await count('credentials')).toBe(0);
    expect((await demo.readCredentials())?.credentials).toHaveLength(2);
    expect(await demo.seedIfEmpty()).toBe(true);
    await fileWorks();
  });

  it('seeds again a database whose seeding stopped before the credentials (a Ctrl-C at the first start), and no other', async () => {
    const db = first.app.get(DataSource);
    const count = async (table: string): Promise<number> => Number((await db.query<{ n: number | string }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0].n);
    const visits = await count('visits');
    // What a seeding stopped after its visits leaves: the demo's clients and data, no menus, no credentials.
    await db.query('DELETE FROM api_keys');
    await db.query('DELETE FROM credentials');
    await db.query('DELETE FROM dishes');
    expect(await count('dishes')).toBe(0);
    expect(await first.app.get(DemoService).seedIfEmpty()).toBe(true);
    expect(await count('credentials')).toBe(2);
    expect(await count('dishes')).toBeGreaterThan(0);
    expect(await count('visits')).toBe(visits);
    expect((await first.app.get(DemoService).readCredentials())?.credentials).toHaveLength(2);
    // A client of the operator's own, or a credential, means the database is not the demo's to seed.
    await db.query('DELETE FROM api_keys');
    await db.query('DELETE FROM credentials');
    await first.app.get(ClientsService).addClient(4242, 'Operator Client');
    expect(await first.app.get(DemoService).seedIfEmpty()).toBe(false);
    expect(await count('credentials')).toBe(0);
  });
});
