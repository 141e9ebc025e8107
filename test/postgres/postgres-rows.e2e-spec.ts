import pg from 'pg';
import { DataSource } from 'typeorm';
import { HandedOnQuery, PostgresRows } from '../../src/database/postgres-rows.js';

/** PostgreSQL's rows handed on one by one as they arrive (see PostgresRows). */
describe('PostgresRows', () => {
  let db: DataSource;
  const texts = ['é😀 中文', '', 'x'.repeat(100_000), 'plain'];
  const sql = `SELECT id, doc, id * 10 AS n FROM (VALUES (1, $1::text), (2, $2::text), (3, $3::text), (4, $4::text)) v(id, doc) WHERE id >= $5 ORDER BY id DESC`;

  beforeAll(async () => {
    // One connection, and a query timeout short enough to be reached.
    db = await new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, poolSize: 1, extra: { query_timeout: 1500 } }).initialize();
  });
  afterAll(() => db.destroy());

  it('hands every row on, in the statement order, with the values TypeORM reads', async () => {
    const rows = new PostgresRows(db);
    const seen: unknown[] = [];
    await rows.each(sql, [...texts, 2], (row) => seen.push(row));
    expect(seen).toEqual(await db.query(sql, [...texts, 2]));
    expect(seen.map((row) => (row as { doc: string }).doc)).toEqual([texts[3], texts[2], texts[1]]);
    const again: number[] = [];
    await rows.each<{ id: number }>(sql, [...texts, 4], (row) => again.push(row.id));
    expect(again).toEqual([4]);
  });

  it('keeps none of the rows it hands on, where a query of node-postgres keeps them all', async () => {
    const client = new pg.Client({ connectionString: process.env.DATABASE_URL });
    await client.connect();
    /** node-postgres' own result of a query: the rows it kept. */
    const kept = (query: pg.Query): unknown[] => (query as unknown as { _result: { rows: unknown[] } })._result.rows;
    const run = async (make: (done: (error: Error | undefined) => void) => pg.Query): Promise<{ query: pg.Query; seen: number[] }> => {
      const seen: number[] = [];
      let query!: pg.Query;
      await new Promise<void>((resolve, reject) => {
        query = make((error) => (error ? reject(error) : resolve()));
        query.on('row', (row: { id: number }) => seen.push(row.id));
        void client.query(query);
      });
      return { query, seen };
    };
    const sql500 = 'SELECT g AS id FROM generate_series(1, 500) g ORDER BY g';
    try {
      const handedOn = await run((done) => new HandedOnQuery(sql500, [], done));
      expect(handedOn.seen).toEqual(Array.from({ length: 500 }, (_, i) => i + 1));
      expect(kept(handedOn.query)).toEqual([]);
      const plain = await run((done) => new pg.Query(sql500, [], done));
      expect(plain.seen).toHaveLength(500);
      expect(kept(plain.query)).toHaveLength(500);
    } finally {
      await client.end();
    }
  });

  it("ends the calls where the caller throws, throws that, and reads on the connection afterwards", async () => {
    const rows = new PostgresRows(db);
    const seen: number[] = [];
    await expect(
      rows.each<{ id: number }>(sql, [...texts, 1], (row) => {
        seen.push(row.id);
        if (row.id === 3) throw new Error('stop');
      }),
    ).rejects.toThrow('stop');
    expect(seen).toEqual([4, 3]);
    const all: number[] = [];
    await rows.each<{ id: number }>(sql, [...texts, 1], (row) => all.push(row.id));
    expect(all).toEqual([4, 3, 2, 1]);
  });

  it("gives the database's error, and the client's query timeout, as errors", async () => {
    const rows = new PostgresRows(db);
    await expect(rows.each('SELECT * FROM no_such_table', [], () => undefined)).rejects.toMatchObject({ code: '42P01' });
    // The client's timeout (1.5 s) ends the wait: a sleep that ran its 2 s would resolve instead.
    await expect(rows.each('SELECT pg_sleep(2)', [], () => undefined)).rejects.toThrow('Query read timeout');
    // The one connection was given back to the pool: it reads again once the sleep is over.
    const after: number[] = [];
    await rows.each<{ id: number }>('SELECT 7 AS id', [], (row) => after.push(row.id));
    expect(after).toEqual([7]);
  });

  it('is for PostgreSQL only', () => {
    const sqlite = new DataSource({ type: 'better-sqlite3', database: ':memory:' });
    expect(() => new PostgresRows(sqlite)).toThrow('rows are handed on as they arrive on PostgreSQL only, not better-sqlite3');
  });
});
