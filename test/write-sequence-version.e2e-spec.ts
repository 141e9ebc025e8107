import type { DataSource } from 'typeorm';
import { lockClients } from '../src/clients/data-version.js';
import { openDataSource } from '../src/database/migration-tools.js';
import { inTransaction } from '../src/database/transaction.js';
import { cliJson } from './helpers/cli.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

/** Slack against JavaScript's clock (whole milliseconds): PostgreSQL reads microseconds, SQLite (julianday, a double of days) the millisecond to within some 40 µs. */
const CLOCK_SLACK_US = 1000;

/**
 * A client's write sequence is its data version (page keys and ETags go by it): the migration
 * that makes it so moves every client's past the clock, past any data_version an ETag was made
 * with before, and a writer of an earlier release, which moves data_version alone, moves it too.
 */
describe(`the write sequence as the data version (${process.env.TEST_DATABASE})`, () => {
  const { config, env, drop } = isolatedConfig();
  let db: DataSource;
  const p = (i: number): string => (onPostgres() ? `$${i}` : '?');
  const state = async (): Promise<{ seq: number; version: number }> => {
    const [row] = await db.query<{ s: number | string; v: number | string }[]>(`SELECT change_seq AS s, data_version AS v FROM clients WHERE id = ${p(1)}`, [1001]);
    return { seq: Number(row.s), version: Number(row.v) };
  };

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme Dining'], env);
    db = await openDataSource(config);
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('is moved past the clock by the migration, whatever it and data_version were', async () => {
    // The database as the release before had it: small counters, and neither the migration nor its trigger.
    await db.query(`UPDATE clients SET change_seq = 3, data_version = 3 WHERE id = ${p(1)}`, [1001]);
    const name = onPostgres() ? 'SequenceFollowsDataVersion1795700000002' : 'SequenceFollowsDataVersion1795700000001';
    await db.query(`DELETE FROM migrations WHERE name = ${p(1)}`, [name]);
    if (onPostgres()) {
      // As pg_restore --clean leaves a database restored from a backup of before the migration: the table's trigger gone, the function kept.
      await db.query('DROP TRIGGER "clients_sequence_follows_data_version" ON "clients"');
    } else {
      await db.query('DROP TRIGGER "clients_sequence_follows_data_version"');
    }
    const before = Date.now() * 1000;
    expect(await cliJson(['migrations', 'run'], env)).toEqual({ applied: [name] });
    const after = await state();
    expect(after.version).toBe(3);
    expect(after.seq).toBeGreaterThanOrEqual(before - CLOCK_SLACK_US);
    expect(after.seq).toBeLessThanOrEqual(Date.now() * 1000 + CLOCK_SLACK_US);
  });

  it('moves past the clock whenever data_version moves (a writer of an earlier release), and not when a writer only locks the client', async () => {
    const before = await state();
    await db.query(`UPDATE clients SET data_version = data_version + 1 WHERE id = ${p(1)}`, [1001]);
    const moved = await state();
    expect(moved.version).toBe(before.version + 1);
    expect(moved.seq).toBeGreaterThan(before.seq);
    await inTransaction(db, (tx) => lockClients(tx, [1001]));
    expect(await state()).toEqual(moved);
    // A writer of the release before, numbering on from a sequence a restore took back: moved past the clock all the same.
    await db.query(`UPDATE clients SET change_seq = 3 WHERE id = ${p(1)}`, [1001]);
    // A restore takes longer than the clock's millisecond.
    await new Promise((resolve) => setTimeout(resolve, 5));
    const clock = Date.now() * 1000;
    await db.query(`UPDATE clients SET change_seq = change_seq + 5, data_version = data_version + 1 WHERE id = ${p(1)}`, [1001]);
    const restored = await state();
    expect(restored.version).toBe(moved.version + 1);
    expect(restored.seq).toBeGreaterThanOrEqual(clock - CLOCK_SLACK_US);
    expect(restored.seq).toBeGreaterThan(moved.seq);
  });
});
