import type { Command } from 'commander';
import { ClientsService } from '../clients/clients.service.js';
import { positiveInt, visibleName, type CliContext } from './context.js';

export function registerClients(program: Command, cli: CliContext): void {
  const clients = program.command('clients').description('client organisations (SvcClientId)');
  clients
    .command('add')
    .description('add a client, or rename an existing one (its visits are written again, with the new name, for the change feed)')
    .requiredOption('--id <id>', 'client id (integer > 0)', positiveInt('--id'))
    .requiredOption('--name <name>', 'client name')
    .action(
      cli.action(async (opts: { id: number; name: string }) =>
        cli.withApp(async (app) => {
          const client = await app.get(ClientsService).addClient(opts.id, opts.name);
          return { json: { id: client.id, name: client.name }, text: `client ${client.id} ${visibleName(client.name)}` };
        }, { writesLocalTimes: true }),
      ),
    );
  clients
    .command('list')
    .description('list clients')
    .action(
      cli.action(async () =>
        cli.withApp(async (app) => {
          const all = await app.get(ClientsService).listClients();
          return {
            json: all.map((c) => ({ id: c.id, name: c.name })),
            text: all.map((c) => `${c.id}\t${visibleName(c.name)}`).join('\n') || '(no clients)',
          };
        }),
      ),
    );
}
