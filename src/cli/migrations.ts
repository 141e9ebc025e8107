import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { Command } from 'commander';
import { OperatorError } from '../common/operator-error.js';
import { generateMigration, migrationsAhead, pendingSchemaChanges, prepareSchema, runMigrationsExclusively, SchemaMissingError } from '../database/migration-tools.js';
import { SQLITE_FILE } from '../database/data-source-options.js';
import type { CliContext } from './context.js';

export function registerMigrations(program: Command, cli: CliContext): void {
  const migrations = program.command('migrations').description('database schema');
  migrations
    .command('run')
    .description('apply pending migrations (production runs this once per release, as a Job)')
    .action(
      cli.action(async () =>
        cli.withDataSource(
          async (db) => {
            const applied = await runMigrationsExclusively(db);
            const names = applied.map((m) => m.name);
            const ahead = await migrationsAhead(db);
            const text = names.length ? `applied: ${names.join(', ')}` : 'schema is current';
            return {
              json: { applied: names, ...(ahead.length ? { ahead } : {}) },
              text: ahead.length ? `${text}\nnote: ${aheadMessage(ahead)}` : text,
            };
          },
          // Making the embedded database is what a first run is for: not said.
          { noteNewDatabase: false },
        ),
      ),
    );
  migrations
    .command('check')
    .description('exit 1 when migrations are pending or the entities need SQL no migration has')
    .action(
      cli.action(async () => {
        // A check changes nothing: a PostgreSQL schema that does not exist is not made, it is reported.
        const config = cli.config();
        try {
          await prepareSchema(config, false);
        } catch (error) {
          if (!(error instanceof SchemaMissingError)) throw error;
          return {
            json: { pendingMigrations: true, drift: [], schemaMissing: config.DATABASE_SCHEMA },
            text: `migrations are pending: DATABASE_SCHEMA "${config.DATABASE_SCHEMA}" does not exist yet (migrations run makes it)`,
            code: 1,
          };
        }
        // Nor is an embedded database where there is none (a mistyped DATA_DIR): it is reported.
        const sqlite = config.DATABASE_URL ? null : join(resolve(config.DATA_DIR), SQLITE_FILE);
        if (sqlite !== null && !existsSync(sqlite)) {
          return {
            json: { pendingMigrations: true, drift: [], databaseMissing: sqlite },
            text: `migrations are pending: there is no database at ${sqlite} yet (is DATA_DIR right? migrations run makes it)`,
            code: 1,
          };
        }
        return cli.withDataSource(async (db) => {
          const pending = await db.showMigrations();
          const ahead = await migrationsAhead(db);
          const drift = pending || ahead.length ? [] : (await pendingSchemaChanges(db)).up;
          const ok = !pending && drift.length === 0 && ahead.length === 0;
          return {
            json: { pendingMigrations: pending, drift, ...(ahead.length ? { ahead } : {}) },
            text: ok ? 'schema is current' : ahead.length ? aheadMessage(ahead) : pending ? 'migrations are pending' : `schema drift:\n${drift.join('\n')}`,
            code: ok ? 0 : 1,
          };
        });
      }),
    );
  migrations
    .command('generate')
    .description('(development) write a migration for the configured database from the entity changes')
    .argument('<name>', 'migration class name, e.g. AddMenuNotes')
    .option('--source <dir>', 'source folder', 'src')
    .action(
      cli.action(async (name: string, opts: { source: string }) => {
        if (!/^[A-Z][A-Za-z0-9]*$/.test(name)) throw new OperatorError(`name must be PascalCase: '${name}'`);
        return cli.withDataSource(async (db) => {
          await db.runMigrations({ transaction: 'each' });
          const file = await generateMigration(db, name, resolve(opts.source));
          return { json: { file }, text: file ? `wrote ${file}` : 'no changes: nothing to generate' };
        });
      }),
    );
}

/** What an operator is told of a database a later release migrated. */
function aheadMessage(ahead: readonly string[]): string {
  return (
    `the database is ahead of this release: it ran migrations this release does not know (${ahead.join(', ')}); ` +
    'run the release that ran them, or restore the backup taken before them (README, "Upgrading and rolling back")'
  );
}
