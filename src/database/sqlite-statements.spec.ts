import { DataSource } from 'typeorm';
import { SqliteStatements } from './sqlite-statements.js';

describe('SqliteStatements', () => {
  let db: DataSource;
  const texts = ['é😀 中文', '', 'x'.repeat(100_000), 'plain'];

  beforeAll(async () => {
    db = await new DataSource({ type: 'better-sqlite3', database: ':memory:' }).initialize();
    await db.query('CREATE TABLE docs (id INTEGER PRIMARY KEY, doc BLOB, n INTEGER)');
    for (const [i, text] of texts.entries()) await db.query('INSERT INTO docs (id, doc, n) VALUES (?, ?, ?)', [i + 1, Buffer.from(text, 'utf8'), i * 10]);
  });

  afterAll(() => db.destroy());

  it('gives the first row with the values TypeORM reads, statement by statement and parameters', async () => {
    const statements = new SqliteStatements(db);
    const sql = 'SELECT id, CAST(doc AS TEXT) AS doc, n FROM docs WHERE id >= ? ORDER BY id DESC';
    expect(statements.get(sql, [2])).toEqual((await db.query(sql, [2]))[0]);
    expect(statements.get(sql, [1])).toEqual({ id: 4, doc: 'plain', n: 30 });
    expect(statements.get(sql, [5])).toBeUndefined();
    // Bytes come back as a Buffer, exactly as stored.
    expect(statements.get<{ doc: Buffer }>('SELECT doc FROM docs WHERE id = ?', [1])!.doc.equals(Buffer.from(texts[0], 'utf8'))).toBe(true);
  });

  it('calls the functions it was given, with the row values, and passes their exceptions on', () => {
    const seen: unknown[][] = [];
    class Refused extends Error {}
    const statements = new SqliteStatements(db, {
      tag: (id, n) => {
        seen.push([id, n]);
        if (id === 3) throw new Refused(`no tag for ${String(id)}`);
        return Buffer.from(`<${String(id)}>`, 'utf8');
      },
    });
    const joined = "SELECT CAST(group_concat(tag(id, n) || doc, ',') AS BLOB) AS joined FROM docs WHERE id IN (1, 2, 4)";
    expect(statements.get<{ joined: Buffer }>(joined, [])!.joined.toString('utf8')).toBe(`<1>${texts[0]},<2>,<4>plain`);
    expect(seen).toEqual([
      [1, 0],
      [2, 10],
      [4, 30],
    ]);
    let thrown: unknown;
    try {
      statements.get('SELECT tag(id, n) FROM docs WHERE id = ?', [3]);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(Refused);
    // The connection is free again afterwards.
    expect(statements.get('SELECT count(*) AS c FROM docs', [])).toEqual({ c: 4 });
  });

  it('is for SQLite only', () => {
    const postgres = new DataSource({ type: 'postgres', url: 'postgres://nobody@127.0.0.1:1/none' });
    expect(() => new SqliteStatements(postgres)).toThrow('statements are run on SQLite only, not postgres');
  });
});
