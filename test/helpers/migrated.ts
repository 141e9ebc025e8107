import type { DataSource } from 'typeorm';
import { openDataSource } from '../../src/database/migration-tools.js';
import type { AppConfig } from '../../src/config/app-config.js';

/**
 * The test's database as a release before the migration whose name starts with `name` left it:
 * every migration run, then the last ones undone down to and including that one.
 */
export async function migratedUpTo(config: AppConfig, name: string): Promise<DataSource> {
  const db = await openDataSource(config);
  await db.runMigrations({ transaction: 'each' });
  const at = db.migrations.findIndex((m) => m.name?.startsWith(name));
  if (at <= 0) throw new Error(`no migration ${name} after the first`);
  for (let i = db.migrations.length - 1; i >= at; i--) await db.undoLastMigration({ transaction: 'each' });
  return db;
}
