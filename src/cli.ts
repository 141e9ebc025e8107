import 'reflect-metadata';
import { pathToFileURL } from 'node:url';
import { runCli } from './cli/program.js';

// The operator CLI's binary (`node dist/cli.js`); the commands themselves are in cli/.
if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  process.exitCode = await runCli(process.argv.slice(2), { env: process.env, stdout: process.stdout, stderr: process.stderr });
}
