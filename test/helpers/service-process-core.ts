import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface ServiceProcess {
  url: string;
  output: () => string;
  child: ChildProcessWithoutNullStreams;
  /**
   * Resolves once the output so far matches; fails when the process ends first or after
   * `timeoutMs` (a generous default: wait for what the service says, not for a time).
   */
  waitForOutput: (expected: RegExp | ((text: string) => boolean), timeoutMs?: number) => Promise<void>;
  /** Signals the process (unless it has ended) and resolves with its exit code once it and its pipes are closed. */
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export interface StartOptions {
  timeoutMs?: number;
  /** Run `dist/main.js` of this folder (a production install) instead of this checkout's. */
  cwd?: string;
  /** Pass exactly `env` (with PATH and HOME), inheriting nothing else from the tests. */
  exactEnv?: boolean;
  /** Options of node itself, before the script (those NODE_OPTIONS does not allow, such as --cpu-prof). */
  nodeArgs?: readonly string[];
  /** Run as this user and group (a test run as root starting the service as another user). */
  user?: { uid: number; gid: number };
}

/**
 * The stop function of every service started here that has not ended yet. No jest globals in
 * this module, so that the benchmark can start services too; service-process.ts stops these
 * after each test file.
 */
export const runningServices = new Set<ServiceProcess['stop']>();

/** Starts the built service (`node dist/main.js`) and waits until it says where it listens. */
export async function startService(env: Record<string, string>, options: StartOptions = {}): Promise<ServiceProcess> {
  const { timeoutMs = 120_000, cwd, exactEnv = false, nodeArgs = [], user } = options;
  const base: Record<string, string | undefined> = exactEnv
    ? { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' }
    : { ...process.env, NODE_OPTIONS: '', PORT: '0', HOST: '127.0.0.1', METRICS_PORT: '0' };
  delete base.DATABASE_URL;
  delete base.DATABASE_SCHEMA;
  const child = spawn(process.execPath, [...nodeArgs, cwd ? 'dist/main.js' : MAIN], { cwd, env: { ...base, ...env }, ...user });
  let text = '';
  let ended = false;
  const listeners = new Set<() => void>();
  // 'close': the process has exited and all its output has been read.
  const closed = new Promise<number | null>((done) =>
    child.once('close', (code) => {
      ended = true;
      runningServices.delete(stop);
      for (const listener of [...listeners]) listener();
      done(code);
    }),
  );
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> => {
    if (!ended) child.kill(signal);
    return closed;
  };
  runningServices.add(stop);
  const onData = (chunk: Buffer): void => {
    text += chunk.toString();
    for (const listener of [...listeners]) listener();
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);

  const waitForOutput = (expected: RegExp | ((text: string) => boolean), waitMs = 120_000): Promise<void> =>
    new Promise((done, fail) => {
      const matches = (): boolean => (typeof expected === 'function' ? expected(text) : expected.test(text));
      const finish = (then: () => void): void => {
        clearTimeout(timer);
        listeners.delete(check);
        then();
      };
      const check = (): void => {
        if (matches()) finish(done);
        else if (ended) finish(() => fail(new Error(`service exited before its output matched ${String(expected)}:\n${text}`)));
      };
      const timer = setTimeout(
        () => finish(() => fail(new Error(`service output did not match ${String(expected)} within ${waitMs} ms:\n${text}`))),
        waitMs,
      );
      listeners.add(check);
      check();
    });

  try {
    // A plain line in a demo, a JSON line otherwise (see DemoService.announce).
    await waitForOutput(/Results service listening on http:\/\/[^\s"]+["\n]/, timeoutMs);
  } catch (error) {
    if (ended) throw new Error(`service exited with ${await closed}:\n${text}`, { cause: error });
    await stop('SIGKILL');
    throw new Error(`service did not start in time:\n${text}`, { cause: error });
  }
  const url = /Results service listening on (http:\/\/[^\s"]+)/.exec(text)![1];
  return { url, output: () => text, child, waitForOutput, stop };
}
