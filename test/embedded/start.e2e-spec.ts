import { mkdtempSync, readFileSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { startService } from '../helpers/service-process.js';

interface DemoFile {
  credentials: { clientId: string; clientSecret: string; apiKey: string; clients: number[]; scopes: string[] }[];
}

const count = (file: string, table: string): number => {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare(`SELECT COUNT(*) AS n FROM ${table}`).get() as { n: number }).n;
  } finally {
    db.close();
  }
};

describe('the embedded default: first and second start with no configuration', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'results-start-'));
  const sqlite = join(dataDir, 'results.sqlite');
  const credentialsFile = join(dataDir, 'demo-credentials.json');
  let first: DemoFile;

  it('migrates, seeds the demo set, and prints the credentials and the Swagger UI address', async () => {
    const service = await startService({ DATA_DIR: dataDir });
    try {
      const ready = await fetch(`${service.url}/health/ready`);
      expect(ready.status).toBe(200);
      first = JSON.parse(readFileSync(credentialsFile, 'utf8')) as DemoFile;
      expect(first.credentials).toHaveLength(2);
      expect(service.output()).toContain(`Swagger UI: ${service.url}/docs`);
      for (const c of first.credentials) {
        expect(service.output()).toContain(`client_id=${c.clientId} client_secret=${c.clientSecret} svc-api-key=${c.apiKey}`);
      }
      expect(first.credentials[0]).toMatchObject({ clients: [1001], scopes: expect.arrayContaining(['visits/plus.read']) });
      expect(statSync(credentialsFile).mode & 0o777).toBe(0o600);
    } finally {
      expect(await service.stop()).toBe(0);
    }
    expect(count(sqlite, 'clients')).toBe(2);
    expect(count(sqlite, 'branches')).toBeGreaterThanOrEqual(35);
    expect(count(sqlite, 'visits')).toBeGreaterThan(3000);
    expect(count(sqlite, 'menus')).toBe(3);
    expect(count(sqlite, 'dishes')).toBeGreaterThan(15);
    expect(count(sqlite, 'dish_images')).toBe(count(sqlite, 'dishes'));
    expect(count(sqlite, 'credentials')).toBe(2);
  });

  it('reuses the data and the credentials on the second start', async () => {
    const visits = count(sqlite, 'visits');
    const service = await startService({ DATA_DIR: dataDir });
    try {
      expect((await fetch(`${service.url}/health/ready`)).status).toBe(200);
      expect(service.output()).toContain(`client_id=${first.credentials[0].clientId}`);
    } finally {
      await service.stop();
    }
    expect(JSON.parse(readFileSync(credentialsFile, 'utf8'))).toEqual(first);
    expect(count(sqlite, 'visits')).toBe(visits);
    expect(count(sqlite, 'credentials')).toBe(2);
  });

  it('stops with a message naming a wrong setting', async () => {
    await expect(startService({ DATA_DIR: dataDir, VISITS_MAX_RANGE_DAYS: '-3' })).rejects.toThrow(
      /exited with 78:\nInvalid configuration:\n {2}- VISITS_MAX_RANGE_DAYS="-3": expected an integer from 1 to 3660/,
    );
  });

  it('does not seed when SEED_DEMO=false', async () => {
    const empty = mkdtempSync(join(tmpdir(), 'results-noseed-'));
    const service = await startService({ DATA_DIR: empty, SEED_DEMO: 'false' });
    await service.stop();
    expect(count(join(empty, 'results.sqlite'), 'clients')).toBe(0);
    expect(service.output()).not.toContain('client_id=');
  });
});
