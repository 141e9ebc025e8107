import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { chmodSync, copyFileSync, cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { DataSource } from 'typeorm';
import { parse } from 'yaml';
import { freePort } from '../helpers/listen.js';
import { startService } from '../helpers/service-process.js';

/**
 * The production start path, as the image runs it: production dependencies only (no dev
 * dependencies, no install scripts, so no native SQLite build), the built dist/, the
 * manifests' ConfigMap values, secrets as the pod gets them (the signing keys in a file),
 * PostgreSQL migrated by the CLI first (the migration Job), then `node dist/main.js` without
 * migrating or seeding, stopped with SIGTERM.
 */

const run = promisify(execFile);
/** Per start of the CLI: a node process loading the whole service, on a shared and busy machine. */
const SPAWN_TIMEOUT_MS = 120_000;
const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const POSTGRES_URL = process.env.TEST_POSTGRES_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/** Every file below a folder (relative paths), folders themselves left out. */
function filesBelow(dir: string): string[] {
  if (!existsSync(dir)) return [];
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((entry) => !entry.isDirectory())
    .map((entry) => join(entry.parentPath, entry.name).slice(dir.length + 1))
    .sort();
}

describe('the production start path: production dependencies, migration Job, then node dist/main.js', () => {
  const work = mkdtempSync(join(tmpdir(), 'results-production-'));
  const app = join(work, 'app');
  const dataDir = join(work, 'tmp', 'results-data');
  const secrets = join(work, 'secrets');
  const schema = `t_prod_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' });
  let env: Record<string, string>;
  let admin: DataSource | undefined;

  /** Runs the operator CLI of the installed copy, as the migration Job does. */
  const cli = (args: string[]) =>
    run(process.execPath, ['dist/cli.js', ...args], {
      cwd: app,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp', ...env },
      timeout: SPAWN_TIMEOUT_MS,
      killSignal: 'SIGKILL',
    });

  beforeAll(async () => {
    mkdirSync(app);
    for (const file of ['package.json', 'package-lock.json']) copyFileSync(join(ROOT, file), join(app, file));
    // A plain `npm ci`, as in the image build: not steered by an outer `npm test`'s variables.
    const npmEnv = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !/^(npm_|INIT_CWD$|NODE_OPTIONS$|NODE_ENV$)/i.test(key)),
    );
    await run('npm', ['ci', '--omit=dev', '--ignore-scripts', '--no-audit', '--no-fund'], {
      cwd: app,
      env: npmEnv,
      timeout: 280_000,
      maxBuffer: 16 * 1024 * 1024,
    });
    cpSync(join(ROOT, 'dist'), join(app, 'dist'), { recursive: true });

    admin = new DataSource({ type: 'postgres', url: POSTGRES_URL });
    await admin.initialize();
    await admin.query(`CREATE SCHEMA "${schema}"`);

    // The signing keys as the Secret volume presents them: a read-only PEM file.
    mkdirSync(secrets);
    const keysFile = join(secrets, 'signing-keys.pem');
    writeFileSync(keysFile, privateKey.export({ type: 'pkcs8', format: 'pem' }));
    chmodSync(keysFile, 0o440);

    // The manifests' settings, with what is local to this machine put over them.
    const configMap = parse(readFileSync(join(ROOT, 'deploy/k8s/configmap.yaml'), 'utf8')) as { data: Record<string, string> };
    env = {
      ...configMap.data,
      PORT: String(await freePort()),
      HOST: '127.0.0.1',
      METRICS_PORT: String(await freePort()),
      PUBLIC_BASE_URL: 'https://results.example.com',
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      DATABASE_URL: POSTGRES_URL,
      DATABASE_SCHEMA: schema,
      API_KEY_HASH_KEY: randomBytes(32).toString('base64url'),
      PAGE_TOKEN_KEY: randomBytes(32).toString('base64url'),
      JWT_SIGNING_KEYS_FILE: keysFile,
    };
    expect(env).toMatchObject({ NODE_ENV: 'production', MIGRATIONS_RUN: 'false', SEED_DEMO: 'false' });
  }, 300_000);

  afterAll(async () => {
    if (admin?.isInitialized) {
      await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await admin.destroy();
    }
    rmSync(work, { recursive: true, force: true });
  });

  it('installed the production dependencies only, without building the SQLite addon', () => {
    const modules = join(app, 'node_modules');
    for (const production of ['@nestjs/core', 'pg', 'typeorm', 'sharp']) expect(existsSync(join(modules, production))).toBe(true);
    for (const dev of ['jest', 'ts-jest', '@nestjs/testing', 'supertest', 'yaml', 'eslint', 'playwright-core']) {
      expect(`${dev}: ${existsSync(join(modules, dev))}`).toBe(`${dev}: false`);
    }
    expect(existsSync(join(modules, 'better-sqlite3', 'build'))).toBe(false);
  });

  it('migrates a fresh schema with `node dist/cli.js migrations run`, and a second run finds nothing to do', async () => {
    const first = await cli(['--json', 'migrations', 'run']);
    expect((JSON.parse(first.stdout) as { applied: string[] }).applied.length).toBeGreaterThan(0);
    const second = await cli(['--json', 'migrations', 'run']);
    expect(JSON.parse(second.stdout)).toEqual({ applied: [] });
  }, 2 * SPAWN_TIMEOUT_MS + 30_000);

  it('starts without migrating or seeding, is ready, signs with the mounted key, writes nothing, exits 0 on SIGTERM', async () => {
    const before = filesBelow(app);
    const service = await startService(env, { cwd: app, exactEnv: true });
    let code: number | null;
    try {
      const live = await fetch(`${service.url}/health/live`);
      expect(live.status).toBe(200);
      // Its own API_KEY_HASH_KEY: no warning about the built-in one.
      expect(service.output()).not.toContain('API_KEY_HASH_KEY');
      const ready = await fetch(`${service.url}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({
        status: 'ok',
        info: { database: { status: 'up' }, migrations: { status: 'up' } },
      });

      // The token signing key is the one from the file, and only that one.
      const jwks = (await (await fetch(`${service.url}/.well-known/jwks.json`)).json()) as { keys: { x: string; y: string }[] };
      const expected = publicKey.export({ format: 'jwk' });
      expect(jwks.keys).toEqual([expect.objectContaining({ kty: 'EC', crv: 'P-256', x: expected.x, y: expected.y })]);

      // Prometheus metrics on their own port, not on the public one.
      const metrics = await fetch(`http://127.0.0.1:${env.METRICS_PORT}/metrics`);
      expect(metrics.status).toBe(200);
      const exposition = await metrics.text();
      expect(exposition).toMatch(/^results_http_requests_total\{method="GET",route="\/health\/ready",status="200"\} 1$/m);
      // The idle collector's count, none yet.
      expect(exposition).toMatch(/^results_idle_collections_total 0$/m);
      // The process's own metrics under the service's prefix, each word once.
      expect(exposition).toMatch(/^results_process_resident_memory_bytes \d+$/m);
      expect(exposition).toMatch(/^results_nodejs_eventloop_lag_seconds [\d.e-]+$/m);
      expect(exposition).not.toMatch(/^results_process_(process|nodejs)_/m);
      expect((await fetch(`${service.url}/metrics`)).status).toBe(404);

      // No demo data: SEED_DEMO=false.
      const [{ n }] = await admin!.query<{ n: number }[]>(`SELECT COUNT(*)::int AS n FROM "${schema}".clients`);
      expect(n).toBe(0);
      expect(service.output()).not.toContain('client_id=');
    } finally {
      code = await service.stop('SIGTERM');
    }
    expect(code).toBe(0);
    // A read-only root filesystem is fine: nothing was written beside the code, nor in DATA_DIR.
    expect(filesBelow(app)).toEqual(before);
    expect(filesBelow(dataDir)).toEqual([]);
  }, 180_000);
});
