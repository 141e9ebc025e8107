import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** Runs the built operator CLI (`npm run cli` without the build step) with the given environment. */
export function cli(args: string[], env: Record<string, string>): Promise<CliResult> {
  return new Promise((done) => {
    const base = { ...process.env };
    delete base.DATABASE_URL;
    delete base.DATABASE_SCHEMA;
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...base, NODE_OPTIONS: '', ...env }, timeout: 60_000 },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

export async function cliJson<T = unknown>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await cli(['--json', ...args], env);
  if (result.code !== 0) throw new Error(`cli ${args.join(' ')} exited ${result.code}: ${result.stderr}${result.stdout}`);
  return JSON.parse(result.stdout) as T;
}
