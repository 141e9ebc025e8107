import type { Command } from 'commander';
import { CredentialsService, MAX_KEEP_OLD_HOURS, type CredentialChanges, type CredentialSummary } from '../auth/credentials.service.js';
import { OperatorError } from '../common/operator-error.js';
import { intList, visibleName, words, type CliContext } from './context.js';

interface AddOptions {
  clients: number[];
  scopes: string[];
  brands?: number[];
  visitTypes?: string[];
  name?: string;
}

interface UpdateOptions {
  clients?: number[];
  scopes?: string[];
  brands?: number[] | typeof ALL;
  visitTypes?: string[] | typeof ALL;
  name?: string;
}

/** What a list option of update gives for `all` (commander takes a parser's null for no value). */
const ALL = 'all';

/** A list option that also takes `all` (no restriction). */
function orAll<T>(parse: (value: string) => T[]): (value: string) => T[] | typeof ALL {
  return (value) => (value.trim().toLowerCase() === ALL ? ALL : parse(value));
}

/** The changes update's options ask for: `all` lifts a restriction (null). */
function changesOf({ brands, visitTypes, ...rest }: UpdateOptions): CredentialChanges {
  return {
    ...rest,
    ...(brands === undefined ? {} : { brands: brands === ALL ? null : brands }),
    ...(visitTypes === undefined ? {} : { visitTypes: visitTypes === ALL ? null : visitTypes }),
  };
}

/** `--keep-old-hours`: a number of hours from 0 to MAX_KEEP_OLD_HOURS. */
function hours(value: string): number {
  const n = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (!(n >= 0 && n <= MAX_KEEP_OLD_HOURS)) throw new OperatorError(`--keep-old-hours must be a number of hours from 0 to ${MAX_KEEP_OLD_HOURS}: '${value}'`);
  return n;
}

/** A credential as `credentials list` writes it in text. */
function credentialText(c: CredentialSummary): string {
  return (
    `${c.clientId}${c.disabled ? ' (disabled)' : ''}  ${visibleName(c.name ?? '')}\n  clients ${c.clients.join(',')}  ` +
    `brands ${c.brands?.join(',') ?? 'all'}  visit types ${c.visitTypes?.join(',') ?? 'all'}\n` +
    `  scopes ${c.scopes.join(' ')}` +
    (c.previousSecretUntil === null ? '' : `\n  previous secret accepted until ${c.previousSecretUntil}`) +
    c.keys.map((k) => `\n  key ${k.prefix}…${k.revoked ? ' (revoked)' : ''}`).join('')
  );
}

export function registerCredentials(program: Command, cli: CliContext): void {
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
      cli.action(async (opts: AddOptions) =>
        cli.withApp(async (app) => {
          const credentials = app.get(CredentialsService);
          const issued = await credentials.add(opts);
          return cli.printOnce({ json: issued, text: JSON.stringify(issued) }, () => credentials.takeBack(issued.clientId));
        }, { writesSecrets: true }),
      ),
    );
  credentials
    .command('list')
    .description('list credentials and their keys (no secrets)')
    .action(
      cli.action(async () =>
        cli.withApp(async (app) => {
          const all = await app.get(CredentialsService).list();
          const text = all.map(credentialText).join('\n');
          return { json: all, text: text || '(no credentials)' };
        }),
      ),
    );
  registerChanges(credentials, cli);
  for (const [verb, description] of [
    ['disable', 'disable a credential: its keys and tokens stop working while it is disabled (within AUTH_CACHE_SECONDS); tokens not yet expired work again if it is enabled'],
    ['enable', 'enable a disabled credential again'],
  ] as const) {
    credentials
      .command(verb)
      .description(description)
      .argument('<clientId>', 'the credential client id')
      .action(
        cli.action(async (clientId: string) =>
          cli.withApp(async (app) => {
            const service = app.get(CredentialsService);
            await (verb === 'disable' ? service.disable(clientId) : service.enable(clientId));
            return { json: { clientId, disabled: verb === 'disable' }, text: `${clientId} ${verb}d` };
          }),
        ),
      );
  }
}

/** The commands that change a credential: its entitlements, its secret. */
function registerChanges(credentials: Command, cli: CliContext): void {
  credentials
    .command('update')
    .description(
      'change what a credential is entitled to: each option given replaces what it had (checked as add checks it); ' +
        'tokens already issued are held to the change within AUTH_CACHE_SECONDS',
    )
    .argument('<clientId>', 'the credential client id')
    .option('--clients <ids>', 'comma-separated client ids it may read', intList('--clients'))
    .option('--scopes <scopes>', 'space- or comma-separated scopes (svc-results-api is always kept)', words)
    .option('--brands <ids>', 'restrict to these brand ids, or all', orAll(intList('--brands')))
    .option('--visit-types <codes>', 'restrict to these visit types, or all', orAll(words))
    .option('--name <label>', 'a label for operators')
    .action(
      cli.action(async (clientId: string, opts: UpdateOptions) =>
        cli.withApp(async (app) => {
          const changes = changesOf(opts);
          if (Object.keys(changes).length === 0) throw new OperatorError('give at least one of --clients, --scopes, --brands, --visit-types, --name');
          const updated = await app.get(CredentialsService).update(clientId, changes);
          return { json: updated, text: credentialText(updated) };
        }),
      ),
    );
  credentials
    .command('rotate-secret')
    .description(
      'give a credential a new client secret (printed once); the old one stops authenticating at once (within AUTH_CACHE_SECONDS), ' +
        'or with --keep-old-hours authenticates too for that long, while the partner moves to the new one. Tokens already issued keep working until they expire',
    )
    .argument('<clientId>', 'the credential client id')
    .option('--keep-old-hours <hours>', `hours the old secret still authenticates, 0 to ${MAX_KEEP_OLD_HOURS}`, hours, 0)
    .action(
      cli.action(async (clientId: string, opts: { keepOldHours: number }) =>
        cli.withApp(async (app) => {
          const credentials = app.get(CredentialsService);
          const { rotated, before } = await credentials.rotateSecret(clientId, opts.keepOldHours);
          return cli.printOnce({ json: rotated, text: JSON.stringify(rotated) }, () => credentials.restoreSecret(clientId, rotated, before));
        }, { writesSecrets: true }),
      ),
    );
}
