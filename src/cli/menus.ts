import type { Command } from 'commander';
import { ImageSweeper, type SweepReport } from '../menus/image-sweep.js';
import { MenusImportService } from '../menus/menus-import.service.js';
import { importOutput, positiveInt, type CliContext } from './context.js';

/** How old an unnamed file must be before a sweep removes it, unless told otherwise. */
const DEFAULT_MIN_AGE_MINUTES = 60;

function sweepText(report: SweepReport): string {
  if (!report.folder) return 'images are kept in the database (IMAGE_STORAGE=database): nothing to sweep';
  const doubt = report.notThisDatabasesFolder === undefined ? [] : [`the sweep itself would be refused: ${report.notThisDatabasesFolder}`];
  return [...doubt, orphansText(report), ...damagedText(report)].join('\n');
}

function orphansText(report: SweepReport): string {
  const bytes = report.orphans.reduce((sum, f) => sum + f.bytes, 0);
  const verb = report.removed ? 'removed' : 'would remove (--dry-run)';
  const lines = [`${report.folder}: ${report.checked} files checked; ${verb} ${report.orphans.length} that no image names (${bytes} bytes)`];
  for (const f of report.orphans) lines.push(`  ${f.name}  ${f.bytes} bytes  modified ${f.modifiedAt}`);
  if (report.tooRecent > 0) lines.push(`${report.tooRecent} more are younger than the minimum age and were left (a write may be under way)`);
  return lines.join('\n');
}

/** The images the service cannot serve, for the operator to restore (the sweep leaves them). */
function damagedText(report: SweepReport): string[] {
  if (report.damaged.length === 0) return [];
  const lines = [
    `${report.damaged.length} image(s) whose file is missing or not what was stored, which the service refuses to serve: restore them from a backup, or upload their dishes' images again`,
  ];
  const said = { missing: () => 'missing', size: (d: SweepReport['damaged'][number]) => `${d.bytes} bytes`, content: () => 'other bytes of the size' };
  for (const d of report.damaged) lines.push(`  ${d.name}  ${said[d.why](d)}, ${d.storedBytes} stored`);
  return lines;
}

export function registerMenus(program: Command, cli: CliContext): void {
  program
    .command('menus')
    .description('menus and dishes')
    .command('import')
    .description('import menus with their dishes and images (JSON array or NDJSON; CSV for menus without dishes); all of the file or nothing')
    .requiredOption('--client <id>', 'client id', positiveInt('--client'))
    .argument('<file>', 'file to import')
    .option('--force', "write images into a folder that holds none of the database's image files: its own, their files all lost (a restore that left them out)")
    .action(
      cli.action(async (file: string, opts: { client: number; force?: boolean }) =>
        cli.withApp(async (app) => importOutput(await app.get(MenusImportService).importFile(opts.client, cli.file(file), { force: opts.force === true }))),
      ),
    );
  program
    .command('images')
    .description('dish images kept in files (IMAGE_STORAGE=filesystem)')
    .command('sweep')
    .description(
      'remove files of the image folder that no image names (left by a process stopped mid-write, or a replaced image whose removal was cut short); ' +
        'list images whose file is missing or not of the size stored, with --verify also of other bytes (exit 1)',
    )
    .option('--min-age-minutes <n>', `leave files younger than this: a write may be under way (default ${DEFAULT_MIN_AGE_MINUTES})`, positiveInt('--min-age-minutes'))
    .option('--dry-run', 'list what would be removed, remove nothing (never refused: says why the sweep would be)')
    .option('--verify', "also read every image file and compare it with the stored SHA-256 (a file of the right size with other bytes)")
    .option('--force', 'sweep a folder of which the database names no file, though the database keeps no image or the files of its images are elsewhere')
    .action(
      cli.action(async (opts: { minAgeMinutes?: number; dryRun?: boolean; verify?: boolean; force?: boolean }) =>
        cli.withApp(async (app) => {
          const minAgeMs = (opts.minAgeMinutes ?? DEFAULT_MIN_AGE_MINUTES) * 60_000;
          const report = await app.get(ImageSweeper).sweep({ minAgeMs, dryRun: opts.dryRun === true, verify: opts.verify === true, force: opts.force === true });
          // Damaged images make the run fail, so that a scheduled sweep is noticed; so does a dry
          // run of a sweep that would be refused.
          const failed = report.damaged.length > 0 || report.notThisDatabasesFolder !== undefined;
          return { json: report, text: sweepText(report), code: failed ? 1 : 0 };
        }),
      ),
    );
}
