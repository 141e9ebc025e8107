import type { DataSource } from 'typeorm';
import { openDataSource, pendingSchemaChanges } from '../src/database/migration-tools.js';
import { POSTGRES_MIGRATIONS, SQLITE_MIGRATIONS } from '../src/database/migrations/index.js';
import { cli } from './helpers/cli.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

describe(`migrations (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;

  beforeAll(async () => {
    db = await openDataSource(config);
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('start from an empty database with every migration pending', async () => {
    expect(await db.showMigrations()).toBe(true);
  });

  it('apply every migration of this database, in order', async () => {
    const applied = await db.runMigrations({ transaction: 'each' });
    const expected = onPostgres() ? POSTGRES_MIGRATIONS : SQLITE_MIGRATIONS;
    expect(expected.length).toBeGreaterThan(0);
    expect(applied.map((m) => m.name)).toEqual(expected.map((m) => m.name));
    expect(await db.showMigrations()).toBe(false);
  });

  it('leave nothing for a new migration to generate', async () => {
    expect(await pendingSchemaChanges(db)).toEqual({ up: [], down: [] });
  });

  it('seed the visit types MV, OF and TA', async () => {
    const rows: { code: string }[] = await db.query('SELECT code FROM visit_types ORDER BY code');
    expect(rows.map((r) => r.code)).toEqual(['MV', 'OF', 'TA']);
  });

  it('roll back cleanly, last to first, and apply again', async () => {
    const count = (onPostgres() ? POSTGRES_MIGRATIONS : SQLITE_MIGRATIONS).length;
    for (let i = 0; i < count; i++) await db.undoLastMigration({ transaction: 'each' });
    expect(await db.showMigrations()).toBe(true);
    await db.runMigrations({ transaction: 'each' });
    expect(await pendingSchemaChanges(db)).toEqual({ up: [], down: [] });
  });
});

describe(`migrations run by several processes at once (${process.env.TEST_DATABASE})`, () => {
  const { config, env, drop } = isolatedConfig();
  afterAll(async () => {
    await drop();
  });

  it('are applied by one of them; the others find them applied, and none fails', async () => {
    const runs = await Promise.all([0, 1, 2].map(() => cli(['--json', 'migrations', 'run'], env)));
    expect(runs.map((r) => [r.code, r.stderr])).toEqual([
      [0, ''],
      [0, ''],
      [0, ''],
    ]);
    const applied = runs.map((r) => (JSON.parse(r.stdout) as { applied: string[] }).applied);
    const all = (onPostgres() ? POSTGRES_MIGRATIONS : SQLITE_MIGRATIONS).map((m) => m.name);
    expect(applied.filter((names) => names.length > 0)).toEqual([all]);
    expect(await cli(['migrations', 'check'], env)).toEqual({ code: 0, stdout: 'schema is current\n', stderr: '' });
  });

  it('says when the database ran migrations this release does not know (a later release migrated it)', async () => {
    const db = await openDataSource(config);
    try {
      await db.query(`INSERT INTO migrations (timestamp, name) VALUES (1899999999999, 'FutureThing1899999999999')`);
    } finally {
      await db.destroy();
    }
    const ahead =
      'the database is ahead of this release: it ran migrations this release does not know (FutureThing1899999999999); ' +
      'run the release that ran them, or restore the backup taken before them (README, "Upgrading and rolling back")';
    expect(await cli(['migrations', 'check'], env)).toEqual({ code: 1, stdout: `${ahead}\n`, stderr: '' });
    expect(JSON.parse((await cli(['--json', 'migrations', 'check'], env)).stdout)).toEqual({ pendingMigrations: false, drift: [], ahead: ['FutureThing1899999999999'] });
    expect(await cli(['migrations', 'run'], env)).toEqual({ code: 0, stdout: `schema is current\nnote: ${ahead}\n`, stderr: '' });
  });
});
