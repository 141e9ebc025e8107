import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { SqliteReaders, type ReadRow } from './sqlite-readers.js';

/** Every row of a read, its byte columns copied (the views handed on are reused afterwards). */
async function all(readers: SqliteReaders, sql: string, params: unknown[], bytes: string[]): Promise<ReadRow[]> {
  const rows: ReadRow[] = [];
  await readers.each<ReadRow>(sql, params, bytes, (row) => {
    for (const [column, value] of Object.entries(row)) if (Buffer.isBuffer(value)) row[column] = Buffer.from(value);
    rows.push(row);
  });
  return rows;
}

describe('SqliteReaders', () => {
  const dir = mkdtempSync(join(tmpdir(), 'sqlite-readers-'));
  const file = join(dir, 'readers.sqlite');
  const texts = ['é😀 中文 \u2028 "q" \\', '', 'x'.repeat(300_000), 'plain'];
  let db: DataSource;
  let readers: SqliteReaders;

  beforeAll(async () => {
    db = await new DataSource({ type: 'better-sqlite3', database: file, enableWAL: true }).initialize();
    await db.query('CREATE TABLE docs (id INTEGER PRIMARY KEY, doc BLOB, n INTEGER, r REAL, t TEXT)');
    for (const [i, text] of texts.entries()) {
      await db.query('INSERT INTO docs (id, doc, n, r, t) VALUES (?, ?, ?, ?, ?)', [i + 1, Buffer.from(text, 'utf8'), i * 10, i + 0.25, i % 2 ? null : `t${i}`]);
    }
    readers = new SqliteReaders(file, 2, { timeoutMs: 1000, cacheKiB: 1000 });
  });

  afterAll(async () => {
    await readers.close();
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives the rows of a statement in its order, with the values the connection reads, the named columns as bytes', async () => {
    const sql = 'SELECT id, CAST(doc AS TEXT) AS doc, doc AS blob, n, r, t FROM docs WHERE id >= ? ORDER BY id DESC';
    const rows = await all(readers, sql, [2], ['doc']);
    const expected = await db.query<Record<string, unknown>[]>(sql, [2]);
    expect(rows).toHaveLength(3);
    for (const [i, row] of rows.entries()) {
      expect(Buffer.isBuffer(row.doc)).toBe(true);
      expect(Buffer.isBuffer(row.blob)).toBe(true);
      // Compared as text: jest compares buffers byte by byte, slowly.
      const { blob, ...rest } = row;
      expect((blob as Buffer).equals(expected[i].blob as Buffer)).toBe(true);
      expect({ ...rest, doc: (row.doc as Buffer).toString('utf8') }).toEqual({ ...expected[i], blob: undefined });
    }
    expect(rows.map((row) => (row.doc as Buffer).toString('utf8'))).toEqual([texts[3], texts[2], texts[1]]);
    // Other parameters, the same prepared statement.
    expect((await all(readers, sql, [4], [])).map((row) => [row.id, row.doc, row.t])).toEqual([[4, texts[3], null]]);
    expect(await all(readers, sql, [99], ['doc'])).toEqual([]);
  });

  it('answers reads made at once, each with its own rows', async () => {
    const sql = 'SELECT id, n, CAST(doc AS TEXT) AS doc FROM docs WHERE id = ?';
    const reads = Array.from({ length: 40 }, (_, i) => all(readers, sql, [(i % 4) + 1], ['doc']));
    const rows = await Promise.all(reads);
    // Compared as text: jest compares buffers byte by byte, slowly.
    const read = rows.map((answer) => answer.map((row) => ({ ...row, doc: (row.doc as Buffer).toString('utf8') })));
    read.forEach((answer, i) => expect(answer).toEqual([{ id: (i % 4) + 1, n: (i % 4) * 10, doc: texts[i % 4] }]));
  });

  it('gives rows larger than the shared memory in a buffer of their own', async () => {
    // 40 copies of the 300 KB text: 12 MB, more than a slot holds.
    const sql = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 40)
      SELECT c.i, CAST(d.doc AS TEXT) AS doc FROM c, docs d WHERE d.id = 3 ORDER BY c.i`;
    const rows = await all(readers, sql, [], ['doc']);
    expect(rows.map((row) => row.i)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
    for (const row of rows) expect((row.doc as Buffer).equals(Buffer.from(texts[2], 'utf8'))).toBe(true);
    // And the next reads in the shared memory again.
    expect(await all(readers, 'SELECT id FROM docs WHERE id < 3 ORDER BY id', [], [])).toEqual([{ id: 1 }, { id: 2 }]);
  });

  it('fails a read with the exception of the caller, and hands on no row after it', async () => {
    const seen: number[] = [];
    const read = readers.each<{ id: number }>('SELECT id FROM docs ORDER BY id', [], [], (row) => {
      seen.push(row.id);
      if (row.id === 2) throw new Error('stop');
    });
    await expect(read).rejects.toThrow('stop');
    expect(seen).toEqual([1, 2]);
    expect(await all(readers, 'SELECT count(*) AS n FROM docs', [], [])).toEqual([{ n: texts.length }]);
  });

  it('sees what another connection committed before the read', async () => {
    await db.query('INSERT INTO docs (id, doc, n) VALUES (10, NULL, 1)');
    expect(await all(readers, 'SELECT id, doc FROM docs WHERE id = 10', [], ['doc'])).toEqual([{ id: 10, doc: null }]);
    await db.query('DELETE FROM docs WHERE id = 10');
    expect(await all(readers, 'SELECT id FROM docs WHERE id = 10', [], [])).toEqual([]);
  });

  it('fails a read with the error of its statement, and reads again afterwards', async () => {
    await expect(all(readers, 'SELECT nope FROM docs', [], [])).rejects.toMatchObject({ message: 'no such column: nope', code: 'SQLITE_ERROR' });
    // The connection is read-only.
    await expect(all(readers, 'DELETE FROM docs RETURNING id', [], [])).rejects.toMatchObject({ code: 'SQLITE_READONLY' });
    expect(await all(readers, 'SELECT count(*) AS n FROM docs', [], [])).toEqual([{ n: texts.length }]);
  });

  it('fails the reads of a thread that stopped, and starts another for the next read', async () => {
    const own = new SqliteReaders(file, 1, { timeoutMs: 1000, cacheKiB: 1000 });
    try {
      expect(await all(own, 'SELECT 1 AS one', [], [])).toEqual([{ one: 1 }]);
      // A read under way, cut short by the thread's end.
      const long = all(own, 'WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 2000000) SELECT count(*) AS n FROM c', [], []);
      const running = (own as unknown as { readers: { worker: { terminate(): Promise<number> } }[] }).readers[0];
      await running.worker.terminate();
      await expect(long).rejects.toThrow(/the database reader stopped/);
      expect(await all(own, 'SELECT 2 AS two', [], [])).toEqual([{ two: 2 }]);
    } finally {
      await own.close();
    }
    await expect(all(own, 'SELECT 1', [], [])).rejects.toThrow('the database readers are closed');
  });
});
