import { execFile } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
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
      expect(service.output()).not.toContain('Public address');
      expect(service.output()).toContain('API_KEY_HASH_KEY is the built-in value, which is public');
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

  it('reuses the data and the credentials on the second start, and says which an operator has since disabled', async () => {
    const visits = count(sqlite, 'visits');
    const disabled = first.credentials[1];
    const setDisabled = (on: boolean): void => {
      const db = new Database(sqlite);
      try {
        db.prepare('UPDATE credentials SET disabled = ? WHERE client_id = ?').run(on ? 1 : 0, disabled.clientId);
      } finally {
        db.close();
      }
    };
    setDisabled(true);
    const service = await startService({ DATA_DIR: dataDir });
    try {
      expect((await fetch(`${service.url}/health/ready`)).status).toBe(200);
      const c = first.credentials[0];
      expect(service.output()).toContain(`client_id=${c.clientId} client_secret=${c.clientSecret} svc-api-key=${c.apiKey}`);
      expect(service.output()).toContain(`client_id=${disabled.clientId} (not usable: it is disabled)`);
      expect(service.output()).not.toContain(disabled.clientSecret);
    } finally {
      await service.stop();
      setDisabled(false);
    }
    expect(JSON.parse(readFileSync(credentialsFile, 'utf8'))).toEqual(first);
    expect(count(sqlite, 'visits')).toBe(visits);
    expect(count(sqlite, 'credentials')).toBe(2);
  });

  it('gives the addresses to open under PUBLIC_BASE_URL when it is set', async () => {
    const service = await startService({ DATA_DIR: dataDir, PUBLIC_BASE_URL: 'https://results.example.com/api/' });
    try {
      expect(service.url).toMatch(/^http:\/\/localhost:\d+$/);
      const banner = service.output().slice(service.output().indexOf('Results service listening on'));
      expect(banner).toMatch(
        new RegExp(`^Results service listening on ${service.url}\nPublic address: https://results\\.example\\.com/api\nSwagger UI: https://results\\.example\\.com/api/docs\n`),
      );
      expect(banner).not.toContain(`${service.url}/docs`);
      expect(banner).toContain(`client_id=${first.credentials[0].clientId}`);
      const metadata = (await (await fetch(`${service.url}/.well-known/oauth-authorization-server`)).json()) as { issuer: string; token_endpoint: string };
      expect(metadata).toMatchObject({ issuer: 'https://results.example.com/api', token_endpoint: 'https://results.example.com/api/connect/token' });
    } finally {
      await service.stop();
    }
  });

  it('prints no demo credentials with SEED_DEMO=false, nor those of another database that DATA_DIR holds', async () => {
    /** Starts the service, and sees that it announces itself without any demo secret. */
    const startsQuietly = async (env: Record<string, string>): Promise<void> => {
      const service = await startService(env);
      try {
        // Plain lines in a demo's start; one JSON line, as the log's, with SEED_DEMO=false.
        if (env.SEED_DEMO === 'false') {
          const line = service.output().split('\n').find((l) => l.includes('Results service listening on'))!;
          expect(JSON.parse(line)).toEqual({
            level: 30,
            time: expect.any(Number) as unknown,
            pid: expect.any(Number) as unknown,
            hostname: hostname(),
            context: 'Start',
            msg: `Results service listening on ${service.url}`,
            swaggerUi: `${service.url}/docs`,
          });
        } else {
          expect(service.output()).toContain('Swagger UI:');
        }
        expect(service.output()).not.toContain('Demo credentials');
        expect(service.output()).not.toContain(first.credentials[0].clientSecret);
      } finally {
        expect(await service.stop()).toBe(0);
      }
    };
    await startsQuietly({ DATA_DIR: dataDir, SEED_DEMO: 'false' });
    // A database that is not the demo's (so it is not seeded), whose DATA_DIR holds the demo's file: its credentials are not this database's.
    const other = mkdtempSync(join(tmpdir(), 'results-start-other-'));
    const setup = await startService({ DATA_DIR: other, SEED_DEMO: 'false' });
    await setup.stop();
    const db = new Database(join(other, 'results.sqlite'));
    db.prepare("INSERT INTO clients (id, name) VALUES (4242, 'Not the demo')").run();
    db.close();
    writeFileSync(join(other, 'demo-credentials.json'), readFileSync(credentialsFile), { mode: 0o600 });
    try {
      await startsQuietly({ DATA_DIR: other });
    } finally {
      rmSync(other, { recursive: true, force: true });
    }
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

describe('npm start on a Node.js outside package.json engines', () => {
  const root = fileURLToPath(new URL('../..', import.meta.url));
  const engines = (JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as { engines: { node: string } }).engines.node;

  /** Runs scripts/ensure-deps.sh (the first step of `npm start`) with `node` reporting `version`. */
  const ensureDeps = (version: string): Promise<{ code: number; stdout: string; stderr: string }> => {
    const shim = mkdtempSync(join(tmpdir(), 'results-node-'));
    writeFileSync(join(shim, 'version.mjs'), `Object.defineProperty(process.versions, 'node', { value: '${version}' });\n`);
    writeFileSync(join(shim, 'node'), `#!/bin/sh\nexec '${process.execPath}' --import '${join(shim, 'version.mjs')}' "$@"\n`);
    chmodSync(join(shim, 'node'), 0o755);
    return new Promise<{ code: number; stdout: string; stderr: string }>((done) => {
      execFile('bash', ['scripts/ensure-deps.sh'], { cwd: root, env: { ...process.env, NODE_OPTIONS: '', PATH: `${shim}:${process.env.PATH ?? ''}` } }, (error, stdout, stderr) =>
        done({ code: error ? Number(error.code ?? 1) : 0, stdout, stderr }),
      );
    }).finally(() => rmSync(shim, { recursive: true, force: true }));
  };

  it('package.json engines admits Node.js 20 from 20.19 and 22 from 22.12', () => {
    expect(engines).toBe('^20.19.0 || >=22.12.0');
  });

  it.each(['18.20.4', '20.18.3', '21.7.3', '22.11.0'])('refuses Node.js %s in one line, before installing anything', async (version) => {
    const result = await ensureDeps(version);
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: `results-service needs Node.js ${engines} (package.json engines); this is Node.js ${version}.\n`,
    });
  });

  it.each(['20.19.0', '20.20.2', '22.12.0', '24.1.0'])('lets Node.js %s through', async (version) => {
    const result = await new Promise<number>((done) =>
      execFile(process.execPath, [join(root, 'scripts/check-node.mjs'), version], (error) => done(error ? Number(error.code ?? 1) : 0)),
    );
    expect(result).toBe(0);
  });
});
