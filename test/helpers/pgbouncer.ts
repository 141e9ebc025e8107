import { spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { eventually } from './eventually.js';
import { freePort } from './listen.js';

/** Debian's pgbouncer (scripts/ensure-test-packages.sh installs it). */
const PGBOUNCER = '/usr/sbin/pgbouncer';

export interface Bouncer {
  /** DATABASE_URL through the pooler to `database` (one of those given to startBouncer). */
  url(database: string): string;
  stop(): Promise<void>;
}

/**
 * A PgBouncer of the test's own on a free loopback port, in front of the PostgreSQL of
 * DATABASE_URL. `databases` maps each name clients use to the libpq settings of its entry
 * (`connect_query='…'`, say), the server's database being DATABASE_URL's. It runs as
 * `nobody` when the tests run as root, which PgBouncer refuses.
 */
export async function startBouncer(poolMode: 'session' | 'transaction', databases: Record<string, string>): Promise<Bouncer> {
  const server = new URL(process.env.DATABASE_URL!);
  const user = decodeURIComponent(server.username) || 'postgres';
  const dir = mkdtempSync(join(tmpdir(), 'results-pgbouncer-'));
  chmodSync(dir, 0o755);
  const port = await freePort();
  const entries = Object.entries(databases).map(
    ([name, extra]) => `${name} = host=${server.hostname} port=${server.port || '5432'} dbname=${server.pathname.slice(1)} ${extra}`,
  );
  const ini = [
    '[databases]',
    ...entries,
    '[pgbouncer]',
    'listen_addr = 127.0.0.1',
    `listen_port = ${port}`,
    'unix_socket_dir =',
    'auth_type = trust',
    `auth_file = ${join(dir, 'users.txt')}`,
    `pool_mode = ${poolMode}`,
    // What the README tells operators to set: node-postgres starts every session with them.
    'ignore_startup_parameters = options,statement_timeout,idle_in_transaction_session_timeout,extra_float_digits',
  ].join('\n');
  writeFileSync(join(dir, 'pgbouncer.ini'), `${ini}\n`, { mode: 0o644 });
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`, { mode: 0o644 });
  const asRoot = process.getuid?.() === 0;
  const command = asRoot ? 'setpriv' : PGBOUNCER;
  const args = [...(asRoot ? ['--reuid=nobody', '--regid=nogroup', '--clear-groups', PGBOUNCER] : []), join(dir, 'pgbouncer.ini')];
  const child: ChildProcess = spawn(command, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let output = '';
  child.stderr!.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = (database: string): string => {
    const through = new URL(process.env.DATABASE_URL!);
    through.hostname = '127.0.0.1';
    through.port = String(port);
    through.pathname = `/${database}`;
    return through.toString();
  };
  const answers = async (): Promise<boolean> => {
    if (child.exitCode !== null) return true;
    const client = new pg.Client({ connectionString: url(Object.keys(databases)[0]) });
    try {
      await client.connect();
      await client.end();
      return true;
    } catch {
      return false;
    }
  };
  await eventually(answers, Boolean, 30_000, 50);
  if (child.exitCode !== null || !(await answers())) {
    rmSync(dir, { recursive: true, force: true });
    throw new Error(`pgbouncer did not start: ${output}`);
  }
  return {
    url,
    stop: async () => {
      child.kill('SIGINT');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
