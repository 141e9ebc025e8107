import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import passport from 'passport';
import { runCli } from '../../src/cli/program.js';

export interface CliResult {
  code: number;
  stdout: string;
  stderr: string;
}

const CLI = fileURLToPath(new URL('../../dist/cli.js', import.meta.url));

/** The environment a command sees: this process's, without its database, then `env` (the test file's database). */
function commandEnv(env: Record<string, string>): Record<string, string | undefined> {
  const base = { ...process.env };
  delete base.DATABASE_URL;
  delete base.DATABASE_SCHEMA;
  return { ...base, ...env };
}

/**
 * Runs an operator command in this process, as `npm run cli -- <args>` would run it with the
 * given environment: same commands, output and exit code, without the start of a process.
 */
export async function cli(args: string[], env: Record<string, string>, options: { stdoutFails?: Error } = {}): Promise<CliResult> {
  let stdout = '';
  let stderr = '';
  // passport keeps its strategies per process: the command's application context registers its
  // own bearer-token strategy over that of an application this test file runs, and closes its
  // database afterwards. Put the application's strategies back, as a separate process leaves them.
  const strategies = passport as unknown as { _strategies: Record<string, passport.Strategy> };
  const before = { ...strategies._strategies };
  try {
    const code = await runCli(args, {
      env: commandEnv(env),
      // `stdoutFails`: every write fails, as on a full disk.
      stdout: {
        write: (text: string, done?: (error?: Error | null) => void) => {
          if (options.stdoutFails) return done?.(options.stdoutFails);
          stdout += text;
          done?.();
        },
      },
      stderr: { write: (text: string) => (stderr += text) },
    });
    return { code, stdout, stderr };
  } finally {
    strategies._strategies = before;
  }
}

export async function cliJson<T = unknown>(args: string[], env: Record<string, string>): Promise<T> {
  const result = await cli(['--json', ...args], env);
  if (result.code !== 0) throw new Error(`cli ${args.join(' ')} exited ${result.code}: ${result.stderr}${result.stdout}`);
  return JSON.parse(result.stdout) as T;
}

/** Per start of the binary: a node process loading the whole service, on a shared and busy machine. */
export const SPAWN_TIMEOUT_MS = 120_000;

/** Runs the built binary (`node dist/cli.js`) in a child process: for the tests of the binary itself; `nodeOptions`: its NODE_OPTIONS (none by default). */
export function spawnCli(args: string[], env: Record<string, string>, nodeOptions = ''): Promise<CliResult> {
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      [CLI, ...args],
      { env: { ...commandEnv(env), NODE_OPTIONS: nodeOptions }, timeout: SPAWN_TIMEOUT_MS, killSignal: 'SIGKILL' },
      (error, stdout, stderr) => {
        if (error?.killed) return fail(new Error(`dist/cli.js ${args.join(' ')} did not finish in ${SPAWN_TIMEOUT_MS} ms:\n${stderr}`));
        const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
        done({ code, stdout, stderr });
      },
    );
  });
}

/** Starts dist/cli.js and gives its process (to signal it) and its result, once it ends (killed past SPAWN_TIMEOUT_MS). */
export function startCli(args: string[], env: Record<string, string>): { child: ChildProcess; result: Promise<CliResult & { signal: NodeJS.Signals | null }> } {
  const child = spawn(process.execPath, [CLI, ...args], { env: { ...commandEnv(env), NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const result = new Promise<CliResult & { signal: NodeJS.Signals | null }>((done, fail) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), SPAWN_TIMEOUT_MS);
    child.on('error', fail);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      done({ code: code ?? -1, signal, stdout, stderr });
    });
  });
  return { child, result };
}

/** Runs dist/cli.js with its stdout closed by the reader at once (`| true`): its exit code and what it wrote to stderr. */
export function spawnCliUnread(args: string[], env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((done, fail) => {
    const child = spawn(process.execPath, [CLI, ...args], { env: { ...commandEnv(env), NODE_OPTIONS: '' }, stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const timer = setTimeout(() => child.kill('SIGKILL'), SPAWN_TIMEOUT_MS);
    child.on('error', fail);
    child.on('close', (code) => {
      clearTimeout(timer);
      done({ code, stderr });
    });
  });
}
