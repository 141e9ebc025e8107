import type { Command } from 'commander';
import { ClientsService } from '../clients/clients.service.js';
import { positiveInt, visibleName, type CliContext } from './context.js';

export function registerBrands(program: Command, cli: CliContext): void {
  const brands = program.command('brands').description('brands of a client (SvcBrandId)');
  brands
    .command('add')
    .description('add a brand to a client, or rename it (its visits are written again, with the new name, for the change feed)')
    .requiredOption('--client <id>', 'client id', positiveInt('--client'))
    .requiredOption('--id <id>', 'brand id (integer > 0, unique across clients)', positiveInt('--id'))
    .requiredOption('--name <name>', 'brand name')
    .action(
      cli.action(async (opts: { client: number; id: number; name: string }) =>
        cli.withApp(async (app) => {
          const brand = await app.get(ClientsService).addBrand(opts.client, opts.id, opts.name);
          return {
            json: { id: brand.id, clientId: brand.clientId, name: brand.name },
            text: `brand ${brand.id} ${visibleName(brand.name)} (client ${brand.clientId})`,
          };
        }, { writesLocalTimes: true }),
      ),
    );
}
