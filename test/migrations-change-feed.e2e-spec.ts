import type { DataSource } from 'typeorm';
import { openDataSource } from '../src/database/migration-tools.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

/**
 * A database that held visits before the change feed existed: the migration gives the visits
 * already stored a write sequence in their current order (modificationDate, then visitId), per
 * client, and moves each client's counter to its last number, so later writes follow them.
 */
describe(`the change feed migration on existing data (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  /** Where AddChangeFeed is in the migrations' order. */
  let at: number;

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    // Back to the schema before the change feed: it and every later migration undone.
    at = db.migrations.findIndex((m) => m.name?.startsWith('AddChangeFeed'));
    expect(at).toBeGreaterThan(0);
    for (let i = db.migrations.length - 1; i >= at; i--) await db.undoLastMigration({ transaction: 'each' });
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('numbers stored visits per client in modificationDate, visitId order, and sets each client counter', async () => {
    const p = (n: number): string => (onPostgres() ? `$${n}` : '?');
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One'), (2, 'Two'), (3, 'Three')`);
    await db.query(`INSERT INTO branches (id, client_id, name) VALUES ('B1', 1, 'b1'), ('B2', 2, 'b2')`);
    const rows: [number, number, string, string][] = [
      [30, 1, 'B1', '2026-01-02T10:00:00'],
      [10, 1, 'B1', '2026-01-03T10:00:00'],
      [20, 1, 'B1', '2026-01-02T10:00:00'],
      [40, 2, 'B2', '2026-01-01T10:00:00'],
      [5, 2, 'B2', '2026-01-05T10:00:00'],
    ];
    for (const [id, client, branch, modified] of rows) {
      await db.query(
        `INSERT INTO visits (id, client_id, branch_id, visit_type, questionnaire_type, visit_score, visit_date, visit_date_time, modification_date, sections)
         VALUES (${p(1)}, ${p(2)}, ${p(3)}, 'MV', 'Q', 50, '2026-01-01', '2026-01-01T09:00:00', ${p(4)}, '[]')`,
        [id, client, branch, modified],
      );
    }
    // AddChangeFeed alone first: its own counters, before a later migration moves them on.
    const later = db.migrations.splice(at + 1);
    await db.runMigrations({ transaction: 'each' });
    const counters = await db.query<{ id: number; s: string | number }[]>('SELECT id, change_seq AS s FROM clients ORDER BY id');
    expect(counters.map((c) => [Number(c.id), Number(c.s)])).toEqual([
      [1, 3],
      [2, 2],
      [3, 0],
    ]);
    db.migrations.push(...later);
    const before = Date.now();
    await db.runMigrations({ transaction: 'each' });

    const visits = await db.query<{ id: string | number; s: string | number; at: string | Date | null }[]>(
      'SELECT id, change_seq AS s, changed_at AS at FROM visits ORDER BY client_id, change_seq',
    );
    expect(visits.map((v) => [Number(v.id), Number(v.s)])).toEqual([
      [20, 1],
      [30, 2],
      [10, 3],
      [40, 1],
      [5, 2],
    ]);
    for (const v of visits) {
      const at = v.at instanceof Date ? v.at.getTime() : Date.parse(`${String(v.at).replace(' ', 'T')}Z`);
      expect(at).toBeGreaterThanOrEqual(before - 5_000);
    }
    // Each client's counter is past its visits' numbers: a later migration moves it on to the clock (SequenceFollowsDataVersion).
    const clients = await db.query<{ id: number; s: string | number }[]>('SELECT id, change_seq AS s FROM clients ORDER BY id');
    expect(clients.map((c) => Number(c.id))).toEqual([1, 2, 3]);
    // (SQLite's clock, a double of days, reads the millisecond to within some 40 µs: one millisecond of slack.)
    for (const c of clients) expect(Number(c.s)).toBeGreaterThanOrEqual((before - 1) * 1000);
  });
});
