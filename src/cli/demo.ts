import type { Command } from 'commander';
import { DemoService } from '../demo/demo.service.js';
import type { CliContext } from './context.js';

export function registerDemo(program: Command, cli: CliContext): void {
  program
    .command('demo')
    .description('load the demo data set into the configured database and issue demo credentials')
    .action(
      cli.action(async () =>
        cli.withApp(async (app) => {
          const summary = await app.get(DemoService).load();
          return {
            json: summary,
            text:
              `demo data loaded: ${summary.clients} clients, ${summary.branches} branches, ${summary.visits} visits, ` +
              `${summary.menus} menus; credentials in ${summary.credentialsFile}`,
          };
        }, { writesSecrets: true, writesLocalTimes: true }),
      ),
    );
}
