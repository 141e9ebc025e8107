import 'reflect-metadata';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { NestFactory } from '@nestjs/core';
import type { INestApplicationContext } from '@nestjs/common';
import { Command, CommanderError } from 'commander';
import { AppModule } from './app.module.js';
import { CredentialsService } from './auth/credentials.service.js';
import { KeyringService } from './auth/keyring.service.js';
import { BranchesService } from './branches/branches.service.js';
import { ClientsService } from './clients/clients.service.js';
import type { ImportReport } from './common/import-report.js';
import { OperatorError } from './common/operator-error.js';
import { RecordFileError } from './common/record-file.js';
import { ConfigError, loadConfig } from './config/app-config.js';
import { generateMigration, openDataSource, pendingSchemaChanges, prepareSchema, SchemaMissingError } from './database/migration-tools.js';
import { DemoService } from './demo/demo.service.js';
import { MenusImportService } from './menus/menus-import.service.js';
import { VisitsImportService } from './visits/visits-import.service.js';

/** Output of one command: JSON with --json, else the human lines. */
interface Output {
  json: unknown;
  text: string;
  /** Exit code; 1 when an import refused records. */
  code?: number;
}

let jsonMode = false;

function positiveInt(name: string) {
  return (value: string): number => {
    if (!/^\d+$/.test(value) || Number(value) <= 0 || !Number.isSafeInteger(Number(value))) {
      throw new OperatorError(`${name} must be an integer greater than 0: '${value}'`);
    }
    return Number(value);
  };
}

function intList(name: string) {
  return (value: string): number[] => value.split(',').map((v) => positiveInt(name)(v.trim()));
}

const words = (value: string): string[] => value.split(/[\s,]+/).filter(Boolean);

async function withApp<T>(run: (app: INestApplicationContext) => Promise<T>): Promise<T> {
  const config = loadConfig();
  await prepareSchema(config);
  const app = await NestFactory.createApplicationContext(AppModule.forRoot(config), { logger: ['error', 'warn'] });
  try {
    return await run(app);
  } finally {
    await app.close();
  }
}

function importOutput(report: ImportReport): Output {
  const lines = [`${report.file}: imported ${report.imported}, rejected ${report.rejected.length}`];
  for (const r of report.rejected) lines.push(`  line ${r.line}: ${r.errors.join(' ')}`);
  return { json: report, text: lines.join('\n'), code: report.rejected.length > 0 ? 1 : 0 };
}

function emit(output: Output): void {
  process.stdout.write(jsonMode ? `${JSON.stringify(output.json, null, 2)}\n` : `${output.text}\n`);
  process.exitCode = output.code ?? 0;
}

function action<A extends unknown[]>(run: (...args: A) => Promise<Output>) {
  return async (...args: A): Promise<void> => emit(await run(...args));
}

export function buildCli(): Command {
  const program = new Command('results-cli')
    .description('Operator commands of the results service. They use the database the environment configures.')
    .option('--json', 'machine-readable JSON output')
    .showHelpAfterError()
    .hook('preAction', (command) => {
      jsonMode = Boolean(command.optsWithGlobals().json);
    });

  const clients = program.command('clients').description('client organisations (SvcClientId)');
  clients
    .command('add')
    .description('add a client, or rename an existing one')
    .requiredOption('--id <id>', 'client id (integer > 0)', positiveInt('--id'))
    .requiredOption('--name <name>', 'client name')
    .action(
      action(async (opts: { id: number; name: string }) =>
        withApp(async (app) => {
          const client = await app.get(ClientsService).addClient(opts.id, opts.name);
          return { json: { id: client.id, name: client.name }, text: `client ${client.id} ${client.name}` };
        }),
      ),
    );
  clients
    .command('list')
    .description('list clients')
    .action(
      action(async () =>
        withApp(async (app) => {
          const all = await app.get(ClientsService).listClients();
          return {
            json: all.map((c) => ({ id: c.id, name: c.name })),
            text: all.map((c) => `${c.id}\t${c.name}`).join('\n') || '(no clients)',
          };
        }),
      ),
    );

  const brands = program.command('brands').description('brands of a client (SvcBrandId)');
  brands
    .command('add')
    .description('add a brand to a client, or rename it')
    .requiredOption('--client <id>', 'client id', positiveInt('--client'))
    .requiredOption('--id <id>', 'brand id (integer > 0, unique across clients)', positiveInt('--id'))
    .requiredOption('--name <name>', 'brand name')
    .action(
      action(async (opts: { client: number; id: number; name: string }) =>
        withApp(async (app) => {
          const brand = await app.get(ClientsService).addBrand(opts.client, opts.id, opts.name);
          return {
            json: { id: brand.id, clientId: brand.clientId, name: brand.name },
            text: `brand ${brand.id} ${brand.name} (client ${brand.clientId})`,
          };
        }),
      ),
    );

  program
    .command('branches')
    .description('branch mappings')
    .command('import')
    .description('import branches: JSON array, NDJSON or CSV with id, name, branchCode, brandId')
    .requiredOption('--client <id>', 'client id', positiveInt('--client'))
    .argument('<file>', 'file to import')
    .action(
      action(async (file: string, opts: { client: number }) =>
        withApp(async (app) => importOutput(await app.get(BranchesService).importFile(opts.client, resolve(file)))),
      ),
    );

  program
    .command('visits')
    .description('visit results')
    .command('import')
    .description(
      'import visits (NDJSON or JSON array in the interface shape plus brandId, guestId, optIns, completedAt); ' +
        'upserts by visitId',
    )
    .argument('<file>', 'file to import')
    .action(
      action(async (file: string) =>
        withApp(async (app) => importOutput(await app.get(VisitsImportService).importFile(resolve(file)))),
      ),
    );

  program
    .command('menus')
    .description('menus and dishes')
    .command('import')
    .description('import menus with their dishes and images (JSON); all of the file or nothing')
    .requiredOption('--client <id>', 'client id', positiveInt('--client'))
    .argument('<file>', 'file to import')
    .action(
      action(async (file: string, opts: { client: number }) =>
        withApp(async (app) => importOutput(await app.get(MenusImportService).importFile(opts.client, resolve(file)))),
      ),
    );

  const credentials = program.command('credentials').description('partner credentials (OAuth clients)');
  credentials
    .command('add')
    .description('create a credential; prints its client id, secret and first API key once')
    .requiredOption('--clients <ids>', 'comma-separated client ids it may read', intList('--clients'))
    .requiredOption('--scopes <scopes>', 'space- or comma-separated scopes', words)
    .option('--brands <ids>', 'restrict to these brand ids (default: all)', intList('--brands'))
    .option('--visit-types <codes>', 'restrict to these visit types (default: all)', words)
    .option('--name <label>', 'a label for operators')
    .action(
      action(async (opts: { clients: number[]; scopes: string[]; brands?: number[]; visitTypes?: string[]; name?: string }) =>
        withApp(async (app) => {
          const issued = await app.get(CredentialsService).add(opts);
          return { json: issued, text: JSON.stringify(issued) };
        }),
      ),
    );
  credentials
    .command('list')
    .description('list credentials and their keys (no secrets)')
    .action(
      action(async () =>
        withApp(async (app) => {
          const all = await app.get(CredentialsService).list();
          const text = all
            .map(
              (c) =>
                `${c.clientId}${c.disabled ? ' (disabled)' : ''}  ${c.name ?? ''}\n  clients ${c.clients.join(',')}  ` +
                `brands ${c.brands?.join(',') ?? 'all'}  visit types ${c.visitTypes?.join(',') ?? 'all'}\n` +
                `  scopes ${c.scopes.join(' ')}\n` +
                c.keys.map((k) => `  key ${k.prefix}…${k.revoked ? ' (revoked)' : ''}`).join('\n'),
            )
            .join('\n');
          return { json: all, text: text || '(no credentials)' };
        }),
      ),
    );
  for (const [verb, description] of [
    ['disable', 'disable a credential: its keys and tokens stop working'],
    ['enable', 'enable a disabled credential again'],
  ] as const) {
    credentials
      .command(verb)
      .description(description)
      .argument('<clientId>', 'the credential client id')
      .action(
        action(async (clientId: string) =>
          withApp(async (app) => {
            const service = app.get(CredentialsService);
            await (verb === 'disable' ? service.disable(clientId) : service.enable(clientId));
            return { json: { clientId, disabled: verb === 'disable' }, text: `${clientId} ${verb}d` };
          }),
        ),
      );
  }

  const keys = program.command('keys').description('API keys of credentials');
  keys
    .command('add')
    .description('issue a further API key for a credential (for rotation); printed once')
    .argument('<clientId>', 'the credential client id')
    .action(
      action(async (clientId: string) =>
        withApp(async (app) => {
          const key = await app.get(CredentialsService).addKey(clientId);
          return { json: key, text: JSON.stringify(key) };
        }),
      ),
    );
  keys
    .command('revoke')
    .description('revoke an API key by its display prefix')
    .argument('<prefix>', 'the key prefix shown by credentials list')
    .action(
      action(async (prefix: string) =>
        withApp(async (app) => {
          await app.get(CredentialsService).revokeKey(prefix);
          return { json: { prefix, revoked: true }, text: `key ${prefix} revoked` };
        }),
      ),
    );

  const signing = program.command('signing-keys').description('keys that sign access tokens');
  signing
    .command('list')
    .description('list signing keys: which signs, which are retired')
    .action(
      action(async () =>
        withApp(async (app) => {
          const keys = await app.get(KeyringService).list();
          const text = keys
            .map((k) => `${k.kid}\t${k.source}\t${k.signing ? 'signing' : k.retiredAt ? `retired ${k.retiredAt}` : 'verifying'}\t${k.createdAt}`)
            .join('\n');
          return { json: keys, text: text || '(no signing keys yet: one is created on first use)' };
        }),
      ),
    );
  signing
    .command('rotate')
    .description('add a new signing key; tokens signed by older keys keep verifying until those are retired')
    .action(
      action(async () =>
        withApp(async (app) => {
          const key = await app.get(KeyringService).rotate();
          return { json: key, text: `signing key ${key.kid} added; it signs new tokens` };
        }),
      ),
    );
  signing
    .command('retire')
    .description('retire a signing key: tokens it signed stop working (within 30 seconds on every replica)')
    .argument('<kid>', 'the key id')
    .action(
      action(async (kid: string) =>
        withApp(async (app) => {
          await app.get(KeyringService).retire(kid);
          return { json: { kid, retired: true }, text: `signing key ${kid} retired` };
        }),
      ),
    );

  program
    .command('demo')
    .description('load the demo data set into the configured database and issue demo credentials')
    .action(
      action(async () =>
        withApp(async (app) => {
          const summary = await app.get(DemoService).load();
          return {
            json: summary,
            text:
              `demo data loaded: ${summary.clients} clients, ${summary.branches} branches, ${summary.visits} visits, ` +
              `${summary.menus} menus; credentials in ${summary.credentialsFile}`,
          };
        }),
      ),
    );

  const migrations = program.command('migrations').description('database schema');
  migrations
    .command('run')
    .description('apply pending migrations (production runs this once per release, as a Job)')
    .action(
      action(async () => {
        const db = await openDataSource(loadConfig());
        try {
          const applied = await db.runMigrations({ transaction: 'each' });
          const names = applied.map((m) => m.name);
          return { json: { applied: names }, text: names.length ? `applied: ${names.join(', ')}` : 'schema is current' };
        } finally {
          await db.destroy();
        }
      }),
    );
  migrations
    .command('check')
    .description('exit 1 when migrations are pending or the entities need SQL no migration has')
    .action(
      action(async () => {
        const db = await openDataSource(loadConfig());
        try {
          const pending = await db.showMigrations();
          const drift = pending ? [] : (await pendingSchemaChanges(db)).up;
          const ok = !pending && drift.length === 0;
          return {
            json: { pendingMigrations: pending, drift },
            text: ok ? 'schema is current' : pending ? 'migrations are pending' : `schema drift:\n${drift.join('\n')}`,
            code: ok ? 0 : 1,
          };
        } finally {
          await db.destroy();
        }
      }),
    );
  migrations
    .command('generate')
    .description('(development) write a migration for the configured database from the entity changes')
    .argument('<name>', 'migration class name, e.g. AddMenuNotes')
    .option('--source <dir>', 'source folder', 'src')
    .action(
      action(async (name: string, opts: { source: string }) => {
        if (!/^[A-Z][A-Za-z0-9]*$/.test(name)) throw new OperatorError(`name must be PascalCase: '${name}'`);
        const db = await openDataSource(loadConfig());
        try {
          await db.runMigrations({ transaction: 'each' });
          const file = await generateMigration(db, name, resolve(opts.source));
          return { json: { file }, text: file ? `wrote ${file}` : 'no changes: nothing to generate' };
        } finally {
          await db.destroy();
        }
      }),
    );

  return program;
}

export async function runCli(argv: string[]): Promise<void> {
  jsonMode = argv.includes('--json');
  const program = buildCli().exitOverride();
  try {
    await program.parseAsync(argv);
  } catch (error) {
    if (error instanceof CommanderError) {
      process.exitCode = error.exitCode;
      return;
    }
    const known = error instanceof OperatorError || error instanceof ConfigError || error instanceof RecordFileError || error instanceof SchemaMissingError;
    const message = known ? (error).message : `unexpected error: ${(error as Error)?.stack ?? String(error)}`;
    if (jsonMode) process.stdout.write(`${JSON.stringify({ error: message })}\n`);
    process.stderr.write(`error: ${message}\n`);
    process.exitCode = known ? 1 : 2;
  }
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runCli(process.argv);
