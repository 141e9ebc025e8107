import type { DataSource } from 'typeorm';
import { BranchesRepository } from '../../src/branches/branches.repository.js';
import { openDataSource } from '../../src/database/migration-tools.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * GET /branches lists a client's branches in the code point order of their ids, as SQLite
 * orders them, whatever collation the PostgreSQL database was created with.
 */
describe('branch order on PostgreSQL', () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  const ids = ['a', 'B', '_', '0', ' lead', '~', 'Z', '\u00e9', '\u{1F600}', '10', '9', 'b-2', 'b2'];

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    // What a database created with an ICU locale (en-US) gives the column by default.
    await db.query(`ALTER TABLE branches ALTER COLUMN id TYPE varchar(64) COLLATE "en-US-x-icu"`);
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One')`);
    await db.query(`INSERT INTO brands (id, client_id, name) VALUES (5, 1, 'Five')`);
    for (const [i, id] of ids.entries()) {
      await db.query(`INSERT INTO branches (id, client_id, name, brand_id) VALUES ($1, 1, $2, $3)`, [id, `n${i}`, i % 2 === 0 ? 5 : null]);
    }
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  const codePointOrder = (values: string[]): string[] =>
    [...values].sort((x, y) => (Buffer.compare(Buffer.from(x), Buffer.from(y))));

  it('is code point order, not the column collation', async () => {
    const byCollation = await db.query<{ id: string }[]>('SELECT id FROM branches ORDER BY id');
    // The collation alone would order them otherwise: the test would see the difference.
    expect(byCollation.map((r) => r.id)).not.toEqual(codePointOrder(ids));

    const listed = await new BranchesRepository(db).list(1, null);
    expect(listed.map((b) => b.id)).toEqual(codePointOrder(ids));
    expect(listed[0]).toEqual({ id: ' lead', name: 'n4', branchCode: null });
  });

  it('keeps that order for a credential of some brands', async () => {
    const listed = await new BranchesRepository(db).list(1, [5]);
    expect(listed.map((b) => b.id)).toEqual(codePointOrder(ids.filter((_, i) => i % 2 === 0)));
  });
});
