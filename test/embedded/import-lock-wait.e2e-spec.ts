import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import Database from 'better-sqlite3';
import { SQLITE_FILE } from '../../src/database/data-source-options.js';
import { cli, cliJson } from '../helpers/cli.js';
import { isolatedConfig } from '../helpers/test-config.js';

/** A request's wait for the database here; an import waits longer. */
const REQUEST_WAIT_MS = 2000;
/** How long the other writer holds SQLite's write lock: longer than a request would wait. */
const HOLD_MS = 5000;

/**
 * Another process (an import, the service) holding SQLite's write lock while an import wants
 * to write: the import waits its turn, as a batch job should, instead of failing with
 * "database is locked" after a request's wait.
 */
describe('an import on SQLite while another process writes', () => {
  const { env, drop } = isolatedConfig({ DATABASE_QUERY_TIMEOUT_MS: String(REQUEST_WAIT_MS) });
  const files = mkdtempSync(join(tmpdir(), 'import-lock-'));
  let holder: ChildProcess | undefined;

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme Dining'], env);
  });
  afterAll(async () => {
    holder?.kill('SIGKILL');
    rmSync(files, { recursive: true, force: true });
    await drop();
  });

  /** A process that takes the write lock, says so, holds it for HOLD_MS, then commits and ends. */
  function holdWriteLock(): Promise<ChildProcess> {
    const script = `
      const Database = require('better-sqlite3');
      const db = new Database(process.argv[1]);
      db.exec('BEGIN IMMEDIATE');
      process.stdout.write('locked\\n');
      setTimeout(() => { db.exec('COMMIT'); db.close(); }, ${HOLD_MS});
    `;
    const child = spawn(process.execPath, ['-e', script, join(resolve(env.DATA_DIR), SQLITE_FILE)], { cwd: process.cwd(), stdio: ['ignore', 'pipe', 'inherit'] });
    return new Promise((done, fail) => {
      child.stdout.once('data', () => done(child));
      child.once('exit', (code) => fail(new Error(`the lock holder ended first (${code})`)));
    });
  }

  it('waits for the lock and imports every record', async () => {
    const path = join(files, 'branches.json');
    writeFileSync(path, JSON.stringify([{ id: 'BR-LOCK', name: 'Waited' }]));
    holder = await holdWriteLock();
    const ended = new Promise<number | null>((done) => holder!.once('exit', done));
    const result = await cli(['--json', 'branches', 'import', '--client', '1001', path], env);
    expect([result.code, result.stderr]).toEqual([0, '']);
    expect(JSON.parse(result.stdout)).toMatchObject({ imported: 1, rejected: [] });
    expect(await ended).toBe(0);
    const db = new Database(join(resolve(env.DATA_DIR), SQLITE_FILE), { readonly: true });
    try {
      expect(db.prepare("SELECT name FROM branches WHERE id = 'BR-LOCK'").all()).toEqual([{ name: 'Waited' }]);
    } finally {
      db.close();
    }
  }, 60_000);
});
