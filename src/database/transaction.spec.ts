import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { inTransaction } from './transaction.js';

describe('inTransaction on SQLite', () => {
  let db: DataSource;
  let file: string;
  const connection = () => (db.driver as unknown as { databaseConnection: { inTransaction: boolean } }).databaseConnection;

  beforeAll(async () => {
    file = join(mkdtempSync(join(tmpdir(), 'tx-')), 'tx.sqlite');
    db = await new DataSource({ type: 'better-sqlite3', database: file, prepareDatabase: (d: Database.Database) => {
        d.pragma('foreign_keys = ON');
      } }).initialize();
    await db.query('CREATE TABLE parents (id INTEGER PRIMARY KEY)');
    // A deferred foreign key is checked at COMMIT: a COMMIT that fails, as one on a full disk does, and leaves SQLite's transaction open.
    await db.query('CREATE TABLE children (id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parents (id) DEFERRABLE INITIALLY DEFERRED)');
    await db.query('INSERT INTO parents (id) VALUES (1)');
  });
  afterAll(() => db.destroy());

  /** The rows another connection sees: what is on disk. */
  function onDisk(): number[] {
    const other = new Database(file, { readonly: true });
    try {
      return (other.prepare('SELECT id FROM children ORDER BY id').all() as { id: number }[]).map((row) => row.id);
    } finally {
      other.close();
    }
  }

  it('commits its work, and rolls it back when the work throws', async () => {
    await inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (1, 1)'));
    await expect(
      inTransaction(db, async (tx) => {
        await tx.query('INSERT INTO children (id, parent_id) VALUES (2, 1)');
        throw new Error('no');
      }),
    ).rejects.toThrow('no');
    expect(onDisk()).toEqual([1]);
    expect(connection().inTransaction).toBe(false);
  });

  it('rolls back a transaction whose COMMIT failed, so the next one commits on its own and reaches the disk', async () => {
    await expect(inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (3, 99)'))).rejects.toThrow(/FOREIGN KEY/);
    expect(connection().inTransaction).toBe(false);
    const runner = db.createQueryRunner();
    expect([runner.isTransactionActive, (runner as unknown as { transactionDepth: number }).transactionDepth]).toEqual([false, 0]);
    await inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (4, 1)'));
    // Before the fix the second ran as a savepoint inside the first, which never committed: nothing reached the disk.
    expect(onDisk()).toEqual([1, 4]);
  });

  it('is left outside any transaction when SQLite ended it itself (as on a full disk) and its ROLLBACK fails', async () => {
    await expect(
      inTransaction(db, async (tx) => {
        await tx.query('INSERT INTO children (id, parent_id) VALUES (6, 1)');
        // SQLITE_FULL rolls the transaction back in SQLite: TypeORM's own ROLLBACK then fails.
        await tx.query('ROLLBACK');
        throw new Error('database or disk is full');
      }),
    ).rejects.toThrow('database or disk is full');
    const runner = db.createQueryRunner();
    // Before the fix TypeORM's runner stayed "in a transaction", and every later one ran as a savepoint inside it.
    expect([runner.isTransactionActive, (runner as unknown as { transactionDepth: number }).transactionDepth]).toEqual([false, 0]);
    await inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (7, 1)'));
    await expect(inTransaction(db, (tx) => tx.query('INSERT INTO children (id, parent_id) VALUES (8, 99)'))).rejects.toThrow(/FOREIGN KEY/);
    expect(onDisk()).toEqual([1, 4, 7]);
  });

  it('lets TypeORM run its statements inside the transaction without a transaction of their own', async () => {
    await inTransaction(db, async (tx) => {
      await tx.createQueryBuilder().insert().into('children').values({ id: 5, parent_id: 1 }).execute();
      expect(connection().inTransaction).toBe(true);
    });
    expect(onDisk()).toEqual([1, 4, 5, 7]);
  });
});
