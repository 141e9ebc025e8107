import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { cli } from '../helpers/cli.js';
import { startService } from '../helpers/service-process.js';

const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';

/**
 * DATABASE_SCHEMA naming a schema the database does not have yet: whoever applies the
 * migrations creates it; a process that does not apply them stops in one line.
 */
describe('a PostgreSQL schema that does not exist yet', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'results-fresh-schema-'));
  const schemas: string[] = [];
  let admin: DataSource;

  /** A schema name no other test uses, dropped after the file. */
  const freshSchema = (): string => {
    const name = `t_fresh_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
    schemas.push(name);
    return name;
  };
  const envFor = (schema: string, extra: Record<string, string> = {}): Record<string, string> => ({
    DATABASE_URL,
    DATABASE_SCHEMA: schema,
    DATA_DIR: dataDir,
    SEED_DEMO: 'false',
    LOG_LEVEL: 'warn',
    ...extra,
  });
  const schemaExists = async (schema: string): Promise<boolean> =>
    (await admin.query<unknown[]>('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).length > 0;
  const appliedMigrations = async (schema: string): Promise<number> =>
    Number((await admin.query<{ n: string }[]>(`SELECT COUNT(*) AS n FROM "${schema}".migrations`))[0].n);
  const refusal = (schema: string): string =>
    `DATABASE_SCHEMA "${schema}" does not exist in the database, and with MIGRATIONS_RUN=false this process does not create it: ` +
    'run the migrations first (npm run cli -- migrations run), or start with MIGRATIONS_RUN=true';

  beforeAll(async () => {
    admin = await new DataSource({ type: 'postgres', url: DATABASE_URL }).initialize();
  });
  afterAll(async () => {
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await admin.destroy();
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('is created and migrated by a start that runs the migrations (the default)', async () => {
    const schema = freshSchema();
    const service = await startService(envFor(schema));
    try {
      const ready = await fetch(`${service.url}/health/ready`);
      expect(ready.status).toBe(200);
      expect(await ready.json()).toMatchObject({ status: 'ok' });
    } finally {
      expect(await service.stop()).toBe(0);
    }
    expect(service.output()).not.toContain('invalid_schema_name');
    expect(await schemaExists(schema)).toBe(true);
    expect(await appliedMigrations(schema)).toBeGreaterThan(0);
  });

  it('is migrated by a start while a transaction elsewhere in the database stays open', async () => {
    // An index built CONCURRENTLY waits for every older snapshot of the whole database, in any
    // schema; on a new schema's empty table the plain form is used, which waits for none.
    const other = admin.createQueryRunner();
    await other.connect();
    await other.query('BEGIN ISOLATION LEVEL REPEATABLE READ');
    await other.query('SELECT 1');
    const schema = freshSchema();
    try {
      const outcome = await startService(envFor(schema, { DATABASE_QUERY_TIMEOUT_MS: '5000' }), { timeoutMs: 60_000 }).then(
        async (service) => {
          const ready = await fetch(`${service.url}/health/ready`);
          expect(await service.stop()).toBe(0);
          return ready.status;
        },
        (error: Error) => error.message,
      );
      expect(outcome).toBe(200);
      const indexes = await admin.query<{ indexdef: string }[]>(
        `SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND indexname = 'ix_visits_client_time'`,
        [schema],
      );
      expect(indexes.map((i) => i.indexdef)).toEqual([
        `CREATE INDEX ix_visits_client_time ON ${schema}.visits USING btree (client_id, visit_date_time, id, brand_id, visit_type)`,
      ]);
    } finally {
      await other.query('ROLLBACK');
      await other.release();
    }
  });

  it('stops a start with MIGRATIONS_RUN=false in one line naming DATABASE_SCHEMA, and creates nothing', async () => {
    const schema = freshSchema();
    // A service that starts anyway is stopped, so the failure is reported instead of a hanging run.
    const outcome = await startService(envFor(schema, { MIGRATIONS_RUN: 'false' }), { timeoutMs: 60_000 }).then(
      async (service) => {
        await service.stop();
        return `started on ${service.url}`;
      },
      (error: Error) => error.message,
    );
    expect(outcome).toBe(`service exited with 69:\nresults-service cannot start: ${refusal(schema)}\n`);
    expect(await schemaExists(schema)).toBe(false);
  });

  it('is reported by `migrations check` as pending, and not created by it', async () => {
    const schema = freshSchema();
    const checked = await cli(['--json', 'migrations', 'check'], envFor(schema));
    expect(checked.code).toBe(1);
    expect(JSON.parse(checked.stdout)).toEqual({ pendingMigrations: true, drift: [], schemaMissing: schema });
    expect(await schemaExists(schema)).toBe(false);
  });

  it('is created by `migrations run`', async () => {
    const schema = freshSchema();
    const result = await cli(['--json', 'migrations', 'run'], envFor(schema));
    expect(result.code).toBe(0);
    const applied = (JSON.parse(result.stdout) as { applied: string[] }).applied;
    expect(applied.length).toBeGreaterThan(0);
    expect(await schemaExists(schema)).toBe(true);
    expect(await appliedMigrations(schema)).toBe(applied.length);
    expect(await cli(['migrations', 'check'], envFor(schema))).toMatchObject({ code: 0, stdout: 'schema is current\n' });
  });

  it('makes another CLI command with MIGRATIONS_RUN=false fail in one line, and one without it migrate first', async () => {
    const schema = freshSchema();
    const refused = await cli(['clients', 'list'], envFor(schema, { MIGRATIONS_RUN: 'false' }));
    expect(refused).toEqual({ code: 1, stdout: '', stderr: `error: ${refusal(schema)}\n` });
    expect(await schemaExists(schema)).toBe(false);

    // Made as the service would make it, and said: a mistyped DATABASE_SCHEMA shows at once.
    const listed = await cli(['--json', 'clients', 'list'], envFor(schema));
    expect(listed).toMatchObject({
      code: 0,
      stderr: `note: there was no schema "${schema}" in the database; a new, empty one is made (is DATABASE_SCHEMA right?)\n`,
    });
    expect(JSON.parse(listed.stdout)).toEqual([]);
    expect(await appliedMigrations(schema)).toBeGreaterThan(0);
    // Once it is there, nothing is said.
    expect(await cli(['--json', 'clients', 'list'], envFor(schema))).toMatchObject({ code: 0, stderr: '' });
  });
});

