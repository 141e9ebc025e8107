import type { Command } from 'commander';
import { CredentialsService } from '../auth/credentials.service.js';
import type { CliContext } from './context.js';

export function registerKeys(program: Command, cli: CliContext): void {
  const keys = program.command('keys').description('API keys of credentials');
  keys
    .command('add')
    .description('issue a further API key for a credential (for rotation); printed once')
    .argument('<clientId>', 'the credential client id')
    .action(
      cli.action(async (clientId: string) =>
        cli.withApp(async (app) => {
          const credentials = app.get(CredentialsService);
          const key = await credentials.addKey(clientId);
          return cli.printOnce({ json: key, text: JSON.stringify(key) }, () => credentials.takeBackKey(key.prefix));
        }, { writesSecrets: true }),
      ),
    );
  keys
    .command('revoke')
    .description('revoke an API key by its display prefix, or by the whole key')
    .argument('<prefix>', 'the key prefix shown by credentials list, or the whole key')
    .action(
      cli.action(async (given: string) =>
        cli.withApp(async (app) => {
          const prefix = await app.get(CredentialsService).revokeKey(given);
          return { json: { prefix, revoked: true }, text: `key ${prefix} revoked` };
        }),
      ),
    );
}
