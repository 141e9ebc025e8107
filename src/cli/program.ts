import { Command, CommanderError } from 'commander';
import { ImportInterrupted } from '../common/import-report.js';
import { environmentFailure } from '../common/environment-failure.js';
import { OperatorError } from '../common/operator-error.js';
import { RecordFileError } from '../common/record-file.js';
import { ConfigError } from '../config/app-config.js';
import { SchemaMissingError } from '../database/migration-tools.js';
import { registerBranches } from './branches.js';
import { registerBrands } from './brands.js';
import { registerClients } from './clients.js';
import { CliContext, OutputFailure, type CliIo } from './context.js';
import { registerCredentials } from './credentials.js';
import { registerDemo } from './demo.js';
import { registerKeys } from './keys.js';
import { registerMenus } from './menus.js';
import { registerMigrations } from './migrations.js';
import { registerSigningKeys } from './signing-keys.js';
import { registerVisits } from './visits.js';
import { registerWebhooks } from './webhooks.js';

/** The operator commands, writing to the run's streams; errors and --help throw instead of ending the process. */
export function buildCli(cli: CliContext): Command {
  const { stdout, stderr } = cli.io;
  // Set before the subcommands are added: they copy these settings from their parent.
  const program = new Command('results-cli')
    .description('Operator commands of the results service. They use the database the environment configures.')
    .option('--json', 'machine-readable JSON output')
    .showHelpAfterError()
    // Each command's help lists --json too (under "Global Options"): every command takes it.
    .configureHelp({ showGlobalOptions: true })
    .exitOverride()
    .configureOutput({
      writeOut: (text) => stdout.write(text),
      writeErr: (text) => stderr.write(text),
      getOutHelpWidth: () => (stdout.isTTY && stdout.columns) || 80,
      getErrHelpWidth: () => (stderr.isTTY && stderr.columns) || 80,
    })
    .hook('preAction', (command) => {
      cli.json = Boolean(command.optsWithGlobals().json);
    });
  for (const register of [
    registerClients,
    registerBrands,
    registerBranches,
    registerVisits,
    registerMenus,
    registerCredentials,
    registerKeys,
    registerSigningKeys,
    registerWebhooks,
    registerDemo,
    registerMigrations,
  ]) {
    register(program, cli);
  }
  refuseRepeatedOptions(program);
  requireOptionsAfterUnknownOnes(program);
  return program;
}

/**
 * A required option that is not given is said once the options given are known: commander
 * checks the required ones first, so a typo (`clients add --id 1001 --nme X`) was answered
 * "required option '--name <name>' not specified", never that '--nme' is no option of the command.
 */
function requireOptionsAfterUnknownOnes(command: Command): void {
  const required = command.options.filter((option) => option.mandatory);
  for (const option of required) option.makeOptionMandatory(false);
  if (required.length > 0) {
    // Run after the unknown options and the arguments are checked, before the action.
    command.hook('preAction', () => {
      const missing = required.find((option) => command.getOptionValue(option.attributeName()) === undefined);
      if (missing) command.error(`error: required option '${missing.flags}' not specified`, { code: 'commander.missingMandatoryOptionValue' });
    });
  }
  for (const sub of command.commands) requireOptionsAfterUnknownOnes(sub);
}

/**
 * An option given twice is refused, on every command: commander keeps the last value, so
 * `credentials add --clients 1001 --clients 1002` made a credential of client 1002 alone.
 */
/** The options that take a list. */
const LISTS = new Set(['clients', 'brands', 'scopes', 'visit-types']);

function refuseRepeatedOptions(command: Command): void {
  for (const option of command.options) {
    let given = 0;
    command.on(`option:${option.name()}`, () => {
      if (++given > 1) throw new OperatorError(`${option.long ?? option.flags} is given more than once: give it once${LISTS.has(option.name()) ? ', with every value in it, comma-separated' : ''}`);
    });
  }
  for (const sub of command.commands) refuseRepeatedOptions(sub);
}

/**
 * Runs one operator command (`args` as typed after `results-cli`) and resolves to its exit
 * code: 0, 1 for an operator's mistake or refused records, 2 for an unexpected error, or
 * commander's code for a usage error. It never ends the process.
 */
export async function runCli(args: readonly string[], io: CliIo): Promise<number> {
  const cli = new CliContext(io, args);
  try {
    // Node reads the command line as UTF-8, bytes that are not as U+FFFD: a name given so would
    // be stored as other text than was typed (an import file's such bytes are refused alike).
    const garbled = args.find((arg) => arg.includes('\uFFFD'));
    if (garbled !== undefined) {
      throw new OperatorError(`the argument '${garbled}' is not UTF-8 text (U+FFFD stands where its bytes were not): give it in UTF-8`);
    }
    await buildCli(cli).parseAsync([...args], { from: 'user' });
    return cli.exitCode;
  } catch (error) {
    // Commander has already written its message (or the help) to the run's streams; with --json
    // a usage error is said on stdout too (preAction, which reads --json, has not run).
    if (error instanceof CommanderError) {
      if (error.exitCode !== 0 && (cli.json || args.includes('--json'))) {
        // No command at all: commander prints the help and says only '(outputHelp)'.
        const message = error.code === 'commander.help' ? 'a command is required (see --help)' : error.message.replace(/^error: /, '');
        io.stdout.write(`${JSON.stringify({ error: message })}\n`);
      }
      return error.exitCode;
    }
    if (error instanceof ImportInterrupted) {
      // What was written, and where it stopped: the report so far, with the error.
      if (cli.json) io.stdout.write(`${JSON.stringify({ error: error.message, ...error.report, stoppedAtLine: error.line })}\n`);
      io.stderr.write(`error: ${error.message}\n`);
      return 2;
    }
    // A folder a setting names that cannot be made or written (DATA_DIR, IMAGE_STORAGE_DIR) is the environment's failure, as the README has it.
    const folder = error instanceof ConfigError && error.cause !== undefined ? environmentFailure(error.cause) : undefined;
    const known =
      folder === undefined &&
      (error instanceof OperatorError || error instanceof ConfigError || error instanceof RecordFileError || error instanceof SchemaMissingError);
    // The output could not be written: said on stderr in one line, exit 2, as a full disk is.
    if (error instanceof OutputFailure) {
      io.stderr.write(`error: ${error.message}\n`);
      return 2;
    }
    // What the environment did (a database out of reach, a folder that cannot be used): said in one line, still exit 2.
    const environment = known ? undefined : (folder ?? environmentFailure(error));
    const message = known ? error.message : (environment ?? `unexpected error: ${(error as Error)?.stack ?? String(error)}`);
    const details = error instanceof OperatorError ? error.details : {};
    if (cli.json) io.stdout.write(`${JSON.stringify({ error: message, ...details })}\n`);
    io.stderr.write(`error: ${message}\n`);
    return known ? 1 : 2;
  }
}
