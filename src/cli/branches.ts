import type { Command } from 'commander';
import { BranchesService } from '../branches/branches.service.js';
import { importOutput, positiveInt, type CliContext } from './context.js';

export function registerBranches(program: Command, cli: CliContext): void {
  program
    .command('branches')
    .description('branch mappings')
    .command('import')
    .description('import branches: JSON array, NDJSON or CSV with id, name, branchCode, brandId')
    .requiredOption('--client <id>', 'client id', positiveInt('--client'))
    .argument('<file>', 'file to import')
    .action(
      cli.action(async (file: string, opts: { client: number }) =>
        cli.withApp(async (app) => importOutput(await app.get(BranchesService).importFile(opts.client, cli.file(file))), { writesLocalTimes: true }),
      ),
    );
}
