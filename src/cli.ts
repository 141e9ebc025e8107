import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { runCli } from './cli/program.js';

// The operator CLI's binary (`node dist/cli.js`); the commands themselves are in cli/.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  // A reader that stops early (`| head`, a script that has what it needs) closes the pipe: what
  // is left to print is dropped, as other tools do, and the command ends with its own code.
  for (const stream of [process.stdout, process.stderr]) {
    stream.on('error', (error: NodeJS.ErrnoException) => {
      if (error.code !== 'EPIPE') throw error;
    });
  }
  process.exitCode = await runCli(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
}
