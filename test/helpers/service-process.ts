import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { fileURLToPath } from 'node:url';

const MAIN = fileURLToPath(new URL('../../dist/main.js', import.meta.url));

export interface ServiceProcess {
  url: string;
  output: () => string;
  child: ChildProcessWithoutNullStreams;
  stop: (signal?: NodeJS.Signals) => Promise<number | null>;
}

export interface StartOptions {
  timeoutMs?: number;
  /** Run `dist/main.js` of this folder (a production install) instead of this checkout's. */
  cwd?: string;
  /** Pass exactly `env` (with PATH and HOME), inheriting nothing else from the tests. */
  exactEnv?: boolean;
}

/** Starts the built service (`node dist/main.js`) and waits until it says where it listens. */
export function startService(env: Record<string, string>, options: StartOptions = {}): Promise<ServiceProcess> {
  const { timeoutMs = 120_000, cwd, exactEnv = false } = options;
  const base: Record<string, string | undefined> = exactEnv
    ? { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: process.env.HOME ?? '/tmp' }
    : { ...process.env, NODE_OPTIONS: '', PORT: '0', HOST: '127.0.0.1', METRICS_PORT: '0' };
  delete base.DATABASE_URL;
  delete base.DATABASE_SCHEMA;
  const child = spawn(process.execPath, [cwd ? 'dist/main.js' : MAIN], { cwd, env: { ...base, ...env } });
  let text = '';
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  const stop = async (signal: NodeJS.Signals = 'SIGTERM'): Promise<number | null> => {
    if (child.exitCode === null) child.kill(signal);
    return exited;
  };
  return new Promise((done, fail) => {
    const timer = setTimeout(() => {
      void stop('SIGKILL');
      fail(new Error(`service did not start in time:\n${text}`));
    }, timeoutMs);
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      const match = /Results service listening on (http:\/\/\S+)/.exec(text);
      if (match) {
        clearTimeout(timer);
        done({ url: match[1], output: () => text, child, stop });
      }
    };
    child.stdout.on('data', onData);
    child.stderr.on('data', onData);
    void exited.then((code) => {
      clearTimeout(timer);
      fail(new Error(`service exited with ${code}:\n${text}`));
    });
  });
}
