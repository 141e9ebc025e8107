import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadConfig } from '../config/app-config.js';
import { prepareDataDir, SQLITE_FILE } from './data-source-options.js';

const Database = createRequire(import.meta.url)('better-sqlite3') as typeof import('better-sqlite3');

describe('prepareDataDir', () => {
  let dataDir: string;
  beforeEach(() => {
    dataDir = mkdtempSync(join(tmpdir(), 'results-data-dir-'));
  });
  afterEach(() => {
    rmSync(dataDir, { recursive: true, force: true });
  });

  it('makes the embedded database readable by its own user only, and SQLite its write-ahead log and shared memory likewise', () => {
    expect(prepareDataDir(loadConfig({ DATA_DIR: dataDir }))).toBe(dataDir);
    const file = join(dataDir, SQLITE_FILE);
    expect(statSync(file).mode & 0o777).toBe(0o600);
    const db = new Database(file);
    try {
      db.pragma('journal_mode = WAL');
      db.exec('CREATE TABLE signing_keys (private_key text); INSERT INTO signing_keys VALUES (\'k\')');
      for (const path of [`${file}-wal`, `${file}-shm`]) expect(statSync(path).mode & 0o777).toBe(0o600);
    } finally {
      db.close();
    }
  });
});
