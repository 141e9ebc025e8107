import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateKeyPairSync } from 'node:crypto';
import Database from 'better-sqlite3';
import { cli, cliJson } from '../helpers/cli.js';
import { demoHeaders } from '../helpers/demo-client.js';
import { startService } from '../helpers/service-process.js';

const SERVICE_KEY = 'the value the service runs with';
const OTHER_KEY = 'another value, typed into a shell';

const REFUSED = /^error: API_KEY_HASH_KEY is not the value the database's API keys, client secrets and webhook secrets were stored under \(its check value differs\): what this command would issue or seal would work on no replica of the service, and the stored keys it judges by it are the service's; run it with the API_KEY_HASH_KEY the service runs with\. Nothing was written\.$/m;

interface Issued {
  clientId: string;
  clientSecret: string;
  apiKey: string;
}

/** A token request of the credential, as a partner makes it: its status. */
async function tokenStatus(url: string, c: Issued): Promise<number> {
  const response = await fetch(`${url}/connect/token`, {
    method: 'POST',
    headers: { 'svc-api-key': c.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret }),
  });
  await response.arrayBuffer();
  return response.status;
}

describe('commands that issue or seal keys and secrets, run with another API_KEY_HASH_KEY than the service', () => {
  it('are refused before they write, naming the setting; the service answers as before', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-setting-checks-'));
    const settings = { DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'warn', API_KEY_HASH_KEY: SERVICE_KEY, WEBHOOKS_ALLOW_HTTP_LOOPBACK: 'true' };
    const service = await startService(settings);
    try {
      await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], settings);
      const issued = await cliJson<Issued>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'], settings);
      expect(await tokenStatus(service.url, issued)).toBe(200);

      const other = { ...settings, API_KEY_HASH_KEY: OTHER_KEY };
      for (const args of [
        ['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'],
        // Before, this ended the partner's secret at once and gave it one no replica took.
        ['credentials', 'rotate-secret', issued.clientId],
        ['keys', 'add', issued.clientId],
        ['webhooks', 'add', issued.clientId, '--url', 'http://127.0.0.1:9/hook'],
        ['signing-keys', 'rotate'],
        ['demo'],
      ]) {
        const refused = await cli(args, other);
        expect({ args, code: refused.code, stdout: refused.stdout }).toEqual({ args, code: 1, stdout: '' });
        expect(refused.stderr).toMatch(REFUSED);
        const json = await cli(['--json', ...args], other);
        expect(json.code).toBe(1);
        expect(JSON.parse(json.stdout)).toEqual({ error: expect.stringMatching(/^API_KEY_HASH_KEY is not the value /) });
      }

      // Nothing was written: the one credential, its one key, no endpoint, the one signing key; its secret still works.
      const credentials = await cliJson<{ clientId: string; keys: unknown[] }[]>(['credentials', 'list'], settings);
      expect(credentials.map((c) => [c.clientId, c.keys.length])).toEqual([[issued.clientId, 1]]);
      expect(await cliJson(['webhooks', 'list'], settings)).toEqual([]);
      expect(await cliJson<unknown[]>(['signing-keys', 'list'], settings)).toHaveLength(1);
      expect(await tokenStatus(service.url, issued)).toBe(200);

      // A rotation later, the key before it looks added by mistake to a process of another value,
      // which was told to retire it with --force: that retired a key the service verifies with.
      await cliJson(['signing-keys', 'rotate', '--now'], settings);
      const keys = await cliJson<{ kid: string; signing: boolean; retiredAt: string | null }[]>(['signing-keys', 'list'], settings);
      const older = keys.find((key) => !key.signing)!.kid;
      const retire = await cli(['signing-keys', 'retire', older, '--force'], other);
      expect([retire.code, retire.stdout]).toEqual([1, '']);
      expect(retire.stderr).toMatch(REFUSED);
      expect((await cliJson<{ retiredAt: string | null }[]>(['signing-keys', 'list'], settings)).map((key) => key.retiredAt)).toEqual([null, null]);

      // With the service's value they write, and what they issue works.
      const rotated = await cliJson<{ clientSecret: string }>(['credentials', 'rotate-secret', issued.clientId], settings);
      expect(await tokenStatus(service.url, { ...issued, clientSecret: rotated.clientSecret })).toBe(200);
    } finally {
      await service.stop();
    }
  });

  it('a start with another value than the one the database keeps the check of stops with exit 78, naming it', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-setting-checks-'));
    // Keys from the setting: no database signing key, whose own refusal would come first.
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const settings = { DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'warn', API_KEY_HASH_KEY: SERVICE_KEY, JWT_SIGNING_KEYS: pem };
    await (await startService(settings)).stop();
    const refusal = startService({ ...settings, API_KEY_HASH_KEY: OTHER_KEY });
    await expect(refusal).rejects.toThrow(
      /^service exited with 78:\n(.*\n)*Invalid configuration:\n {2}- API_KEY_HASH_KEY is not the value the database's API keys, client secrets and webhook secrets were stored under \(its check value differs\): set the value they were stored under\n$/,
    );
    await (await startService(settings)).stop();
  });

  it("writes no first signing key into the database's empty ring, sealed under its other value, where the service could open none then", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-setting-checks-'));
    // Keys from the setting: the database's ring stays empty, and the start stores the check value.
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
    const ring = { DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'warn', API_KEY_HASH_KEY: SERVICE_KEY };
    await (await startService({ ...ring, JWT_SIGNING_KEYS: pem })).stop();

    // Any command, run where the keys' setting is not given and with another value.
    const listed = await cli(['clients', 'list'], { ...ring, API_KEY_HASH_KEY: OTHER_KEY });
    expect(listed.code).toBe(0);
    const db = new Database(join(dataDir, 'results.sqlite'));
    const stored = db.prepare('SELECT kid FROM signing_keys').all();
    db.close();
    expect(stored).toEqual([]);

    // Moved to the database's ring, the service makes its first key and serves.
    await (await startService(ring)).stop();
    expect(await cliJson<unknown[]>(['signing-keys', 'list'], ring)).toHaveLength(1);
  });

  it('changed on purpose, as the README says (the check removed, the old signing keys retired with --force), the service starts with the new value', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-setting-checks-'));
    const settings = { DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'warn', API_KEY_HASH_KEY: SERVICE_KEY };
    const before = await startService(settings);
    try {
      await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], settings);
      const issued = await cliJson<Issued>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'], settings);
      // The token request makes the ring's first key when the start has not.
      expect(await tokenStatus(before.url, issued)).toBe(200);
    } finally {
      await before.stop();
    }
    const kids = (await cliJson<{ kid: string; retiredAt: string | null }[]>(['signing-keys', 'list'], settings)).filter((key) => key.retiredAt === null).map((key) => key.kid);
    expect(kids).toHaveLength(1);

    const db = new Database(join(dataDir, 'results.sqlite'));
    db.prepare("DELETE FROM setting_checks WHERE name = 'API_KEY_HASH_KEY'").run();
    db.close();
    const changed = { ...settings, API_KEY_HASH_KEY: OTHER_KEY };
    // The keys sealed under the earlier value open under none now: they go, the only one included.
    for (const kid of kids) {
      const retired = await cli(['signing-keys', 'retire', kid, '--force'], changed);
      expect([retired.code, retired.stdout]).toEqual([0, `signing key ${kid} retired\n`]);
    }
    const service = await startService(changed);
    try {
      const issued = await cliJson<Issued>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'], changed);
      expect(await tokenStatus(service.url, issued)).toBe(200);
      const keys = await cliJson<{ kid: string; retiredAt: string | null }[]>(['signing-keys', 'list'], changed);
      expect(keys.filter((key) => key.retiredAt === null).map((key) => key.kid)).toEqual([expect.not.stringMatching(new RegExp(`^(${kids.join('|')})$`))]);
    } finally {
      await service.stop();
    }
  });
});

describe('a replica started before the migrations (MIGRATIONS_RUN=false on a database they have not reached)', () => {
  // Keys from the setting: the database has no ring to keep them in yet.
  const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' }).toString();
  const before = (dataDir: string) => ({ DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'info', API_KEY_HASH_KEY: SERVICE_KEY, JWT_SIGNING_KEYS: pem, MIGRATIONS_RUN: 'false' });

  it('stores the check once the migrations have run, so that a command of another value is refused from then on', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-setting-checks-'));
    const settings = before(dataDir);
    const service = await startService(settings);
    try {
      const migrated = await cli(['migrations', 'run'], settings);
      expect(migrated.code).toBe(0);
      // Tried every 5 s: stored at the first try that finds the table.
      await service.waitForOutput(/the settings' checks are stored, now that the migrations have made their table/, 60_000);
      await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], settings);
      const refused = await cli(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'], { ...settings, API_KEY_HASH_KEY: OTHER_KEY });
      expect([refused.code, refused.stdout]).toEqual([1, '']);
      expect(refused.stderr).toMatch(REFUSED);
      expect(await cliJson<unknown[]>(['credentials', 'list'], settings)).toEqual([]);
    } finally {
      await service.stop();
    }
  });

  it('stops, exit 78 after its drain, when the check another process stored meanwhile is of another value', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-setting-checks-'));
    const service = await startService(before(dataDir));
    // The table and another value's check at once, as a replica of another value that ran the migrations would leave them.
    const db = new Database(join(dataDir, 'results.sqlite'));
    db.transaction(() => {
      db.exec('CREATE TABLE "setting_checks" ("name" varchar(50) PRIMARY KEY NOT NULL, "value" varchar(100) NOT NULL)');
      db.prepare("INSERT INTO setting_checks (name, value) VALUES ('API_KEY_HASH_KEY', 'hmac-sha256$' || ?)").run('0'.repeat(64));
    })();
    db.close();
    await service.waitForOutput(/API_KEY_HASH_KEY is not the value the database's API keys, client secrets and webhook secrets were stored under/, 60_000);
    expect(await service.stop()).toBe(78);
    expect(service.output()).toMatch(/stopped \d+\.\d s after a differing API_KEY_HASH_KEY/);
  });
});

describe('commands that write visits, run with another RESULTS_TIMEZONE than the service', () => {
  it("are refused before they write, naming both zones; the dates served stay in the service's zone", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-setting-checks-'));
    const zone = 'America/New_York';
    const settings = { DATA_DIR: dataDir, DEMO_DAYS: '1', LOG_LEVEL: 'warn', RESULTS_TIMEZONE: zone };
    const service = await startService(settings);
    try {
      const { headers } = await demoHeaders(service.url, dataDir);
      const local = (at: Date): string => new Intl.DateTimeFormat('sv-SE', { timeZone: zone, dateStyle: 'short', timeStyle: 'medium' }).format(at).replace(' ', 'T');
      const yesterday = local(new Date(Date.now() - 86_400_000)).slice(0, 10);
      const firstVisit = async (): Promise<{ clientName: string; modificationDate: string }> => {
        const response = await fetch(`${service.url}/visits/standard?SvcClientId=1001&FromDate=${yesterday}&ToDate=${yesterday}&Take=1&Skip=0`, { headers });
        return ((await response.json()) as { data: { visits: { clientName: string; modificationDate: string }[] } }).data.visits[0];
      };
      const before = await firstVisit();

      const other = { ...settings, RESULTS_TIMEZONE: 'Pacific/Kiritimati' };
      const empty = join(dataDir, 'empty.json');
      writeFileSync(empty, '[]');
      for (const args of [
        // Before, this wrote every visit of the client again, dated 19 hours ahead of the service's now.
        ['clients', 'add', '--id', '1001', '--name', 'Renamed'],
        ['brands', 'add', '--client', '1001', '--id', '5', '--name', 'Renamed'],
        ['branches', 'import', '--client', '1001', empty],
        ['visits', 'import', empty],
        ['demo'],
      ]) {
        const refused = await cli(args, other);
        expect({ args, code: refused.code, stdout: refused.stdout }).toEqual({ args, code: 1, stdout: '' });
        expect(refused.stderr).toMatch(
          /^error: RESULTS_TIMEZONE is Pacific\/Kiritimati, and the service runs with America\/New_York \(as its last start stored\): the modification dates this command writes would be in another zone than those it serves; run it with RESULTS_TIMEZONE=America\/New_York\. Nothing was written\.\n$/,
        );
      }
      expect(await firstVisit()).toEqual(before);

      // With the service's zone, here by another of its names, the rename is written, dated by now in that zone.
      await cliJson(['clients', 'add', '--id', '1001', '--name', 'Renamed'], { ...settings, RESULTS_TIMEZONE: 'US/Eastern' });
      const renamed = await firstVisit();
      expect(renamed.clientName).toBe('Renamed');
      expect(renamed.modificationDate <= local(new Date(Date.now() + 1000))).toBe(true);
    } finally {
      await service.stop();
    }
  });
});
