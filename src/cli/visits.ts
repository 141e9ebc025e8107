import type { Command } from 'commander';
import { VisitsImportService } from '../visits/visits-import.service.js';
import { importOutput, type CliContext } from './context.js';
import { stopOnSignals } from './stop-signals.js';

export function registerVisits(program: Command, cli: CliContext): void {
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
      cli.action(async (file: string) => {
        // From before the application starts (a second or so): a signal while it does stops the
        // import before its first batch, with the same report, instead of ending the process.
        const stop = stopOnSignals(cli.io.stderr);
        try {
          return await cli.withApp(async (app) => importOutput(await app.get(VisitsImportService).importFile(cli.file(file), stop.requested)), { writesLocalTimes: true });
        } finally {
          stop.dispose();
        }
      }),
    );
}
