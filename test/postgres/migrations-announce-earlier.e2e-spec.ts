import type { DataSource } from 'typeorm';
import { migrationsAhead } from '../../src/database/migration-tools.js';
import { cli } from '../helpers/cli.js';
import { migratedUpTo } from '../helpers/migrated.js';
import { isolatedConfig } from '../helpers/test-config.js';

/** The name AnnounceWriteSequence had in the releases of 2026-11-25, which ran it before SequenceFollowsDataVersion. */
const EARLIER = 'AnnounceWriteSequence1795700000000';

/**
 * A PostgreSQL database a release of 2026-11-25 migrated: it ran AnnounceWriteSequence under its
 * earlier name. This release runs the migration again under its own name, and takes the earlier
 * one for its own, not for a later release's.
 */
describe('AnnounceWriteSequence on a database that ran it under its earlier name (postgres)', () => {
  const { config, env, drop } = isolatedConfig();
  let db: DataSource;

  beforeAll(async () => {
    db = await migratedUpTo(config, 'AnnounceWriteSequence');
    await db.query('INSERT INTO migrations (timestamp, name) VALUES ($1, $2)', [Number(EARLIER.slice(-13)), EARLIER]);
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('applies what this release adds, keeps the earlier row, and says the database is current, not ahead', async () => {
    const before = await cli(['--json', 'migrations', 'check'], env);
    expect(before.code).toBe(1);
    expect(JSON.parse(before.stdout)).toEqual({ pendingMigrations: true, drift: [] });

    const run = await cli(['migrations', 'run'], env);
    expect(run.code).toBe(0);
    expect(run.stdout + run.stderr).not.toMatch(/ahead/);
    const names = (await db.query<{ name: string }[]>('SELECT name FROM migrations ORDER BY id')).map((m) => m.name);
    expect(names).toContain(EARLIER);
    expect(names.at(-1)).toBe(db.migrations.at(-1)!.name);
    expect(await migrationsAhead(db)).toEqual([]);

    expect(await cli(['migrations', 'check'], env)).toEqual({ code: 0, stdout: 'schema is current\n', stderr: '' });
    expect(JSON.parse((await cli(['--json', 'migrations', 'check'], env)).stdout)).toEqual({ pendingMigrations: false, drift: [] });
  });
});
