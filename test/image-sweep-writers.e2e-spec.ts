import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { SQLITE_FILE } from '../src/database/data-source-options.js';
import { ImageSweeper } from '../src/menus/image-sweep.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

const HOUR = 3600_000;
const postgres = process.env.TEST_DATABASE === 'postgres';

/**
 * `images sweep` beside a write that has stored an image's file and not yet committed its row,
 * however long ago: the file is the image's as soon as the write commits, so the sweep leaves
 * it. On PostgreSQL such a write holds the dishes table, and files younger than its start are
 * kept; on SQLite the sweep's last look and removals wait for the write lock the writer holds.
 */
describe(`images sweep beside a write in progress (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let db: DataSource;
  const folder = mkdtempSync(join(tmpdir(), 'images-writers-'));

  beforeAll(async () => {
    // SQLite: a short wait for the write lock, so the sweep that meets a writer gives up soon.
    t = await startTestApp({ IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: folder, ...(postgres ? {} : { DATABASE_QUERY_TIMEOUT_MS: '1000' }) });
    db = t.app.get(DataSource);
    // An image of the database, whose file is in the folder: a sweep refuses a folder of which
    // the database names no file and keeps no image (image-sweep-settings).
    const kept = randomUUID();
    fileOf(kept, 0);
    await db.query(`${INSERT} (${rowFor(kept).map((_, i) => (postgres ? `$${i + 1}` : '?')).join(', ')})`, rowFor(kept));
  });
  afterAll(async () => {
    await t.close();
  });

  /** A file as the storage writes it, modified `ago` ms before now. */
  function fileOf(name: string, ago: number): string {
    const path = join(folder, name);
    writeFileSync(path, 'bytes');
    const at = new Date(Date.now() - ago);
    utimesSync(path, at, at);
    return path;
  }
  const rowFor = (name: string) => [randomUUID(), 'image/png', 5, 1, 1, 'x'.repeat(64), name];
  const INSERT = 'INSERT INTO dish_images (id, content_type, bytes, width, height, sha256, storage_key) VALUES';

  const onPostgres = postgres ? it : null;
  const onSqlite = postgres ? null : it;

  onPostgres?.('keeps a file younger than a transaction still open on the dishes table, and sweeps it once that has ended', async () => {
    const writer = db.createQueryRunner();
    await writer.connect();
    const name = randomUUID();
    let path: string;
    try {
      await writer.startTransaction();
      // What every write of a dish reads first: the transaction now holds the table.
      await writer.query('SELECT 1 FROM dishes LIMIT 1');
      path = fileOf(name, 0);
      // Three hours on, the file is well past the minimum age of one, and its writer is still open.
      const later = new Date(Date.now() + 3 * HOUR);
      const kept = await t.app.get(ImageSweeper).sweep({ minAgeMs: HOUR, dryRun: false, now: later });
      expect(kept.orphans.map((o) => o.name)).not.toContain(name);
      expect(kept.tooRecent).toBeGreaterThanOrEqual(1);
      expect(existsSync(path)).toBe(true);
      await writer.rollbackTransaction();
    } finally {
      if (writer.isTransactionActive) await writer.rollbackTransaction();
      await writer.release();
    }
    // The write ended without naming the file: an orphan, swept.
    const swept = await t.app.get(ImageSweeper).sweep({ minAgeMs: HOUR, dryRun: false, now: new Date(Date.now() + 3 * HOUR) });
    expect(swept.orphans.map((o) => o.name)).toContain(name);
    expect(existsSync(path)).toBe(false);
  });

  onSqlite?.('waits for a writer of another process holding the write lock, and keeps the file its commit names', async () => {
    const name = randomUUID();
    const path = fileOf(name, 2 * HOUR);
    // The CLI's import in another process: its row naming the file is written, not yet committed.
    const other = new Database(join(t.config.DATA_DIR, SQLITE_FILE));
    try {
      other.exec('BEGIN IMMEDIATE');
      other.prepare(`${INSERT} (?, ?, ?, ?, ?, ?, ?)`).run(...rowFor(name));
      await expect(t.app.get(ImageSweeper).sweep({ minAgeMs: HOUR, dryRun: false })).rejects.toThrow(/database is locked|SQLITE_BUSY/);
      expect(existsSync(path)).toBe(true);
      other.exec('COMMIT');
    } finally {
      if (other.inTransaction) other.exec('ROLLBACK');
      other.close();
    }
    const after = await t.app.get(ImageSweeper).sweep({ minAgeMs: HOUR, dryRun: false });
    expect(after.orphans.map((o) => o.name)).not.toContain(name);
    expect(existsSync(path)).toBe(true);
    expect(await db.query('SELECT storage_key FROM dish_images WHERE storage_key = ?', [name])).toEqual([{ storage_key: name }]);
  });

  it('sweeps an orphan older than the minimum age when no writer is open', async () => {
    const name = randomUUID();
    const path = fileOf(name, 2 * HOUR);
    const swept = await t.app.get(ImageSweeper).sweep({ minAgeMs: HOUR, dryRun: false });
    expect(swept.orphans.map((o) => o.name)).toContain(name);
    expect(existsSync(path)).toBe(false);
  });
});
