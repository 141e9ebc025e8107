import type { Command } from 'commander';
import { CredentialsService } from '../auth/credentials.service.js';
import { intList, visibleName, words, type CliContext } from './context.js';

interface AddOptions {
  clients: number[];
  scopes: string[];
  brands?: number[];
  visitTypes?: string[];
  name?: string;
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
        }),
      ),
    );
  credentials
    .command('list')
    .description('list credentials and their keys (no secrets)')
    .action(
      cli.action(async () =>
        cli.withApp(async (app) => {
          const all = await app.get(CredentialsService).list();
          const text = all
            .map(
              (c) =>
                `${c.clientId}${c.disabled ? ' (disabled)' : ''}  ${visibleName(c.name ?? '')}\n  clients ${c.clients.join(',')}  ` +
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
