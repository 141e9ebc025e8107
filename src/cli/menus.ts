import { resolve } from 'node:path';
import type { Command } from 'commander';
import { MenusImportService } from '../menus/menus-import.service.js';
import { importOutput, positiveInt, type CliContext } from './context.js';

export function registerMenus(program: Command, cli: CliContext): void {
  program
    .command('menus')
    .description('menus and dishes')
    .command('import')
    .description('import menus with their dishes and images (JSON); all of the file or nothing')
    .requiredOption('--client <id>', 'client id', positiveInt('--client'))
    .argument('<file>', 'file to import')
    .action(
      cli.action(async (file: string, opts: { client: number }) =>
        cli.withApp(async (app) => importOutput(await app.get(MenusImportService).importFile(opts.client, resolve(file)))),
      ),
    );
}
