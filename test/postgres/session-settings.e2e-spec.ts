import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { getDataSourceToken } from '@nestjs/typeorm';
import pg from 'pg';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { ClientDataVersions } from '../../src/clients/data-versions.js';
import { ConfigError, loadConfig } from '../../src/config/app-config.js';
import { prepareSchema, refuseSessionsWithoutSettings } from '../../src/database/migration-tools.js';
import { issueCredential, tokenFor } from '../helpers/auth.js';
import { spawnCli } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { seedVisits, type VisitRecord } from '../helpers/visits-fixture.js';

/**
 * A database of the operator's own, whose defaults are not PostgreSQL's: a European DateStyle
 * (`SQL, DMY`), under which node-postgres read every timestamp as null (the token endpoint
 * answered 500 on the signing keys' dates), a time zone and an interval style of its own, and
 * DATABASE_URL's own startup options, which took the place of the service's search path.
 */
describe('PostgreSQL sessions whatever the database sets by default (postgres)', () => {
  const admin = new pg.Client({ connectionString: process.env.DATABASE_URL });
  const suffix = `${Date.now().toString(36)}_${randomBytes(3).toString('hex')}`;
  const european = `rs_settings_${suffix}`;
  const latin1 = `rs_latin1_${suffix}`;
  const urlOf = (database: string, options?: string): string => {
    const url = new URL(process.env.DATABASE_URL!);
    url.pathname = `/${database}`;
    if (options) url.searchParams.set('options', options);
    return url.toString();
  };
  let t: TestApp;
  let visits: VisitRecord[];

  beforeAll(async () => {
    await admin.connect();
    await admin.query(`CREATE DATABASE ${european}`);
    await admin.query(`ALTER DATABASE ${european} SET datestyle TO 'SQL, DMY'`);
    await admin.query(`ALTER DATABASE ${european} SET timezone TO 'Europe/London'`);
    await admin.query(`ALTER DATABASE ${european} SET intervalstyle TO 'sql_standard'`);
    // Doubles in 15 digits, which read back as other numbers than those stored.
    await admin.query(`ALTER DATABASE ${european} SET extra_float_digits TO 0`);
    await admin.query(`CREATE DATABASE ${latin1} ENCODING 'LATIN1' LC_COLLATE 'C' LC_CTYPE 'C' TEMPLATE template0`);
    // The URL's own options name a DateStyle too: the service's settings come after them and win.
    t = await startTestApp({ DATABASE_URL: urlOf(european, '-c lock_timeout=4321 -c datestyle=German') });
    ({ visits } = await seedVisits(t));
  });
  afterAll(async () => {
    await t.close();
    for (const database of [european, latin1]) await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
    await admin.end();
  });

  it("issues tokens and serves pages, its sessions in the service's schema with the URL's own options kept", async () => {
    const db = t.app.get<DataSource>(getDataSourceToken());
    const setting = async (name: string): Promise<string | undefined> => Object.values((await db.query<Record<string, string>[]>(`SHOW ${name}`))[0] ?? {})[0];
    expect({
      datestyle: await setting('DateStyle'),
      timezone: await setting('TimeZone'),
      intervalstyle: await setting('IntervalStyle'),
      extraFloatDigits: await setting('extra_float_digits'),
      lockTimeout: await setting('lock_timeout'),
      schema: ((await db.query<{ s: string }[]>('SELECT current_schema() AS s'))[0] ?? { s: null }).s,
    }).toEqual({ datestyle: 'ISO, YMD', timezone: 'UTC', intervalstyle: 'postgres', extraFloatDigits: '3', lockTimeout: '4321ms', schema: t.config.DATABASE_SCHEMA });

    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const from = visits.filter((v) => v.clientId === 1001).map((v) => String(v.visitDateTime).slice(0, 10)).sort()[0];
    const page = await request(t.http)
      .get(`/visits/standard?SvcClientId=1001&FromDate=${from}&ToDate=${from}&Skip=0&Take=10`)
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Bearer ${token}`);
    expect(page.status).toBe(200);
    const body = (page.body as { data: { visits: { visitId: number }[] } }).data;
    const ids = (list: { visitId: unknown }[]): number[] => list.map((v) => Number(v.visitId)).sort((a, b) => a - b);
    expect(ids(body.visits)).toEqual(ids(visits.filter((v) => String(v.visitDateTime).startsWith(from))));
    expect(body.visits).toHaveLength(3);
    // The data-version listener's own session: in the schema too, so it hears the client's writes.
    const versions = t.app.get(ClientDataVersions);
    await versions.current(1001);
    expect(await eventually(() => Promise.resolve(versions.isListening), Boolean, 30_000, 20)).toBe(true);
  });

  it("stores an instant before 1900 as it was given, whatever the importing process's time zone", async () => {
    // London's local mean time, -0:01:15: what node-postgres wrote in local time lost its seconds.
    const [model] = visits;
    const file = join(mkdtempSync(join(tmpdir(), 'session-settings-')), 'visits.ndjson');
    const records = [
      { ...model, visitId: 880001, completedAt: '1800-01-01T00:00:00Z' },
      { ...model, visitId: 880002, completedAt: '0001-01-01T00:00:00Z' },
    ];
    writeFileSync(file, records.map((r) => JSON.stringify(r)).join('\n'));
    const imported = await spawnCli(['visits', 'import', file], { ...t.env, TZ: 'Europe/London' });
    expect({ code: imported.code, stderr: imported.stderr }).toEqual({ code: 0, stderr: '' });
    const db = t.app.get<DataSource>(getDataSourceToken());
    const rows = await db.query<{ id: string; at: string }[]>(
      `SELECT id, to_char(completed_at AT TIME ZONE 'UTC', 'YYYY-MM-DD HH24:MI:SS AD') AS at FROM visits WHERE id IN (880001, 880002) ORDER BY id`,
    );
    expect(rows.map((r) => [Number(r.id), r.at])).toEqual([
      [880001, '1800-01-01 00:00:00 AD'],
      [880002, '0001-01-01 00:00:00 AD'],
    ]);
  });

  it('refuses to start on a database whose encoding is not UTF8, naming it', async () => {
    const config = loadConfig({ DATABASE_URL: urlOf(latin1), DATABASE_SCHEMA: 'results', SEED_DEMO: 'false' });
    const refusal = await prepareSchema(config).then(
      () => null,
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(ConfigError);
    expect((refusal as ConfigError).problems).toEqual([
      "DATABASE_URL names a database whose encoding is LATIN1; the service keeps text as UTF-8 and needs a database created with ENCODING 'UTF8'",
    ]);
    // Refused before anything was made in it.
    const inside = new pg.Client({ connectionString: urlOf(latin1) });
    await inside.connect();
    try {
      expect((await inside.query(`SELECT 1 FROM pg_namespace WHERE nspname = 'results'`)).rowCount).toBe(0);
    } finally {
      await inside.end();
    }
  });

  it("refuses sessions that run without the service's settings, as behind a pooler that drops startup parameters, naming each; the role's defaults pass", async () => {
    // What PgBouncer with ignore_startup_parameters = options leaves: the database's defaults, not the service's.
    const bare = new DataSource({ type: 'postgres', url: urlOf(european), poolSize: 1 });
    await bare.initialize();
    try {
      const refusal = await refuseSessionsWithoutSettings(bare, 'results').then(
        () => null,
        (error: unknown) => error,
      );
      expect(refusal).toBeInstanceOf(ConfigError);
      expect((refusal as ConfigError).problems).toEqual([
        'DATABASE_URL gives sessions without the settings the service starts them with (search_path is "$user", public, not results; ' +
          'DateStyle is SQL, DMY, not ISO; TimeZone is Europe/London, not UTC; IntervalStyle is sql_standard, not postgres; ' +
          'extra_float_digits is 0, not 1 or more): ' +
          'a pooler between the service and PostgreSQL drops them (PgBouncer with ignore_startup_parameters)? ' +
          'Give them to the role instead (README, "Running on PostgreSQL and Redis")',
      ]);
      // Given to every session some other way (the role's defaults, the pooler's own), they pass.
      await bare.query("SET search_path = results, public; SET DateStyle = 'ISO, MDY'; SET TimeZone = 'UTC'; SET IntervalStyle = 'postgres'; SET extra_float_digits = 1");
      await expect(refuseSessionsWithoutSettings(bare, 'results')).resolves.toBeUndefined();
    } finally {
      await bare.destroy();
    }
  });
});
