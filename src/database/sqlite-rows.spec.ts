import { DataSource } from 'typeorm';
import { SqliteRows } from './sqlite-rows.js';

describe('SqliteRows', () => {
  let db: DataSource;
  const texts = ['é😀 中文', '', 'x'.repeat(100_000), 'plain'];

  beforeAll(async () => {
    db = await new DataSource({ type: 'better-sqlite3', database: ':memory:' }).initialize();
    await db.query('CREATE TABLE docs (id INTEGER PRIMARY KEY, doc BLOB, n INTEGER)');
    for (const [i, text] of texts.entries()) await db.query('INSERT INTO docs (id, doc, n) VALUES (?, ?, ?)', [i + 1, Buffer.from(text, 'utf8'), i * 10]);
  });

  afterAll(() => db.destroy());

  it('hands every row on, in the statement order, with the values TypeORM reads', async () => {
    const rows = new SqliteRows(db);
    const sql = 'SELECT id, CAST(doc AS TEXT) AS doc, n FROM docs WHERE id >= ? ORDER BY id DESC';
    const seen: unknown[] = [];
    rows.each(sql, [2], (row) => seen.push(row));
    expect(seen).toEqual(await db.query(sql, [2]));
    expect(seen.map((row) => (row as { doc: string }).doc)).toEqual([texts[3], texts[2], texts[1]]);
    // The same statement again, with other parameters.
    const again: number[] = [];
    rows.each<{ id: number }>(sql, [4], (row) => again.push(row.id));
    expect(again).toEqual([4]);
  });

  it('ends the read where the caller throws, and reads again afterwards', () => {
    const rows = new SqliteRows(db);
    const sql = 'SELECT id FROM docs ORDER BY id';
    const seen: number[] = [];
    expect(() =>
      rows.each<{ id: number }>(sql, [], (row) => {
        seen.push(row.id);
        if (row.id === 2) throw new Error('stop');
      }),
    ).toThrow('stop');
    expect(seen).toEqual([1, 2]);
    // The statement was reset: the connection and the statement are free again.
    const all: number[] = [];
    rows.each<{ id: number }>(sql, [], (row) => all.push(row.id));
    expect(all).toEqual([1, 2, 3, 4]);
  });

  it('is for SQLite only', () => {
    const postgres = new DataSource({ type: 'postgres', url: 'postgres://nobody@127.0.0.1:1/none' });
    expect(() => new SqliteRows(postgres)).toThrow('rows are stepped through on SQLite only, not postgres');
  });
});
