import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { runCli } from './cli/program.js';

// The operator CLI's binary (`node dist/cli.js`); the commands themselves are in cli/.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // A reader that stops early (`| head`, a script that has what it needs) closes the pipe: what
  // is left to print is dropped, as other tools do, and the command ends with its own code.
  // Output that cannot be written otherwise (a full disk) ends it with exit 2 and one line; a
  // command that shows a secret once takes back what it made (CliContext.printOnce).
  let unwritten: NodeJS.ErrnoException | undefined;
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code !== 'EPIPE') unwritten ??= error;
  });
  process.stderr.on('error', () => undefined);
  const code = await runCli(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
  // A write's failure is told after the write returned (on the next tick, or once a pipe took it).
  await new Promise<void>((resolve) => (process.stdout.writableNeedDrain ? process.stdout.once('drain', resolve).once('error', () => resolve()) : setImmediate(resolve)));
  if (unwritten !== undefined && code === 0) process.stderr.write(`error: cannot write the output: ${unwritten.message}\n`);
  process.exitCode = unwritten !== undefined && code === 0 ? 2 : code;
}
