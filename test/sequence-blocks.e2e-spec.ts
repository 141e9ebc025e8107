import type { DataSource } from 'typeorm';
import { lockClients } from '../src/clients/data-version.js';
import { openDataSource } from '../src/database/migration-tools.js';
import { inTransaction } from '../src/database/transaction.js';
import type { WebhookOutbox } from '../src/webhooks/webhook-outbox.js';
import { VisitsRepository } from '../src/visits/visits.repository.js';
import { cliJson } from './helpers/cli.js';
import { migratedUpTo } from './helpers/migrated.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

const DAY_US = 86_400 * 1_000_000;

/**
 * The blocks of write sequence numbers each move of a client's data version took, recorded by
 * the database whoever writes: a change-feed token naming a number between two of them was
 * given out by the database as it was before a restore from an earlier backup.
 */
describe(`the blocks of write sequence numbers (${process.env.TEST_DATABASE})`, () => {
  const { config, env, drop } = isolatedConfig();
  let db: DataSource;
  let repo: VisitsRepository;
  const p = (i: number): string => (onPostgres() ? `$${i}` : '?');
  const head = async (client = 1001): Promise<number> => {
    const [row] = await db.query<{ s: number | string }[]>(`SELECT change_seq AS s FROM clients WHERE id = ${p(1)}`, [client]);
    return Number(row.s);
  };
  const blocks = async (client = 1001): Promise<[number, number][]> => {
    const rows = await db.query<{ f: number | string; l: number | string }[]>(
      `SELECT first_seq AS f, last_seq AS l FROM sequence_blocks WHERE client_id = ${p(1)} ORDER BY last_seq`,
      [client],
    );
    return rows.map((row) => [Number(row.f), Number(row.l)]);
  };
  /** A write of `visits` visits, as the visits import moves the sequence (a change of names moves the version alone: 0). */
  const write = (visits: number, client = 1001): Promise<unknown> =>
    db.query(`UPDATE clients SET change_seq = change_seq + ${visits}, data_version = data_version + 1 WHERE id = ${p(1)}`, [client]);

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme Dining'], env);
    await cliJson(['clients', 'add', '--id', '1002', '--name', 'Other Group'], env);
    db = await openDataSource(config);
    // The feed's check reads the database alone; the outbox is for writes.
    repo = new VisitsRepository(db, undefined as unknown as WebhookOutbox);
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('records the numbers each move took: five for a write of five visits, one for a change of names, none for a lock, none for another client', async () => {
    const before = await blocks();
    await write(5);
    const five = await head();
    await write(0);
    const names = await head();
    await inTransaction(db, (tx) => lockClients(tx, [1001]));
    await write(3, 1002);
    expect(await blocks()).toEqual([...before, [five - 4, five], [names, names]]);
    expect(await head()).toBe(names);
    expect(names).toBeGreaterThan(five);
  });

  it('knows the positions it gave out; one between two blocks, or past the head, it did not', async () => {
    await write(4);
    const first = await head();
    // SQLite's clock moves by the millisecond.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(2);
    const second = await head();
    // The sequence moved past the clock between the two writes: numbers no write took lie between.
    expect(second - 1).toBeGreaterThan(first + 1);
    for (const known of [first - 4, first - 3, first, second - 2, second - 1, second, 0]) {
      expect([known, await repo.gaveOutFeedPosition(1001, known)]).toEqual([known, true]);
    }
    for (const lost of [first + 1, second - 3, second + 1]) {
      expect([lost, await repo.gaveOutFeedPosition(1001, lost)]).toEqual([lost, false]);
    }
    // Another client's blocks are its own: a position 1001's write took is in a gap of 1002's.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(1, 1002);
    expect(await repo.gaveOutFeedPosition(1002, second)).toBe(false);
    expect(await repo.gaveOutFeedPosition(1002, await head(1002))).toBe(true);
    expect(await repo.gaveOutFeedPosition(9999, 0)).toBe(false);
  });

  it('takes a position before every block kept: a token of before blocks were recorded, or older than they are kept', async () => {
    const [[oldest]] = await blocks();
    expect(await repo.gaveOutFeedPosition(1001, oldest - 1000)).toBe(true);
  });

  it('removes the blocks past the sequence a write moves on from (taken back with it), and those more than 400 days before the newest', async () => {
    const now = await head();
    const insert = (first: number, last: number): Promise<unknown> =>
      db.query(`INSERT INTO sequence_blocks (client_id, first_seq, last_seq) VALUES (${p(1)}, ${p(2)}, ${p(3)})`, [1001, first, last]);
    await insert(now - 401 * DAY_US, now - 401 * DAY_US);
    await insert(now - 399 * DAY_US, now - 399 * DAY_US);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(1);
    const kept = await blocks();
    expect(kept.map(([, last]) => last)).not.toContain(now - 401 * DAY_US);
    expect(kept.map(([, last]) => last)).toContain(now - 399 * DAY_US);
    // The clients' rows as an earlier backup had them, the blocks as they are: the write after
    // it removes those the backup did not hold.
    const backup = kept[kept.length - 3][1];
    await db.query(`UPDATE clients SET change_seq = ${p(1)} WHERE id = ${p(2)}`, [backup, 1001]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(2);
    const after = await blocks();
    const newest = await head();
    expect(after).toEqual([...kept.slice(0, -2), [newest - 1, newest]]);
    expect(await repo.gaveOutFeedPosition(1001, kept[kept.length - 1][1])).toBe(false);
    expect(await repo.gaveOutFeedPosition(1001, backup)).toBe(true);
  });

  it('finds the blocks a write removes in the index: the oldest and those past the sequence, never by reading every block of the client', async () => {
    // A year of blocks is some 500,000 of a client that writes every minute: read whole at every
    // write, they cost SQLite 50 to 90 ms a write, under its one write lock. Each statement of
    // the trigger that removes blocks is looked at as the database plans it, NEW and OLD as
    // parameters.
    if (onPostgres()) {
      // PostgreSQL plans the function's statement at run time: two ranges of the primary key (a BitmapOr).
      const [{ 'QUERY PLAN': plan }] = await db.query<{ 'QUERY PLAN': unknown }[]>(
        'EXPLAIN (FORMAT JSON) DELETE FROM sequence_blocks WHERE client_id = $1 AND (last_seq > $2 OR last_seq < $3)',
        [1001, 1, 0],
      );
      expect(JSON.stringify(plan)).not.toMatch(/"Seq Scan"/);
      return;
    }
    const [{ sql }] = await db.query<{ sql: string }[]>("SELECT sql FROM sqlite_master WHERE type = 'trigger' AND name = 'clients_sequence_follows_data_version'");
    const body = sql.slice(sql.indexOf(' BEGIN ') + 7, sql.lastIndexOf('END'));
    const deletes = body
      .split(';')
      .map((statement) => statement.trim())
      .filter((statement) => statement.startsWith('DELETE'))
      .map((statement) => statement.replace(/(NEW|OLD)\."\w+"/g, '?'));
    expect(deletes.length).toBeGreaterThan(0);
    for (const statement of deletes) {
      const plan = await db.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${statement}`, Array.from({ length: statement.split('?').length - 1 }, () => 1));
      const blocksRead = plan.filter((step) => / sequence_blocks\b/.test(step.detail)).map((step) => step.detail);
      expect([statement, blocksRead]).toEqual([statement, [expect.stringMatching(/^SEARCH sequence_blocks USING (?:PRIMARY KEY|(?:COVERING )?INDEX sqlite_autoindex_sequence_blocks_1) \(client_id=\? AND last_seq[<>]\?\)$/)]]);
    }
  });

  it("refuses, after a restore, a token of a write since the upgrade, where the backup holds no block of the client: the upgrade's head is one", async () => {
    // A client written to before the upgrade alone (the release before recorded no block).
    await db.undoLastMigration({ transaction: 'each' });
    await db.query(`INSERT INTO clients (id, name) VALUES (${p(1)}, ${p(2)})`, [1003, 'Quiet Group']);
    await write(7, 1003);
    await db.runMigrations({ transaction: 'each' });
    // A backup of it then (before any write since the upgrade); a write, whose feed token a partner reads on from.
    const upgraded = await head(1003);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(3, 1003);
    const lost = await head(1003);
    // The backup restored (the blocks as it holds them), then written to.
    await db.query(`UPDATE clients SET change_seq = ${p(1)} WHERE id = ${p(2)}`, [upgraded, 1003]);
    await db.query(`DELETE FROM sequence_blocks WHERE client_id = ${p(1)} AND last_seq > ${p(2)}`, [1003, upgraded]);
    await new Promise((resolve) => setTimeout(resolve, 5));
    await write(1, 1003);
    expect(await repo.gaveOutFeedPosition(1003, lost)).toBe(false);
    // The positions the restored data gave are taken: its head, and those of before the upgrade.
    expect(await repo.gaveOutFeedPosition(1003, upgraded)).toBe(true);
    expect(await repo.gaveOutFeedPosition(1003, upgraded - 5)).toBe(true);
    expect(await repo.gaveOutFeedPosition(1003, await head(1003))).toBe(true);
  });
});

/**
 * A database of the release before the blocks (a backup of it restored to roll back, then
 * migrated again): the migration records the block each client's sequence is at, so that a
 * token given out after that backup's point is one no write of the restored data gave, after
 * the next write too.
 */
describe(`RecordSequenceBlocks over a database of the release before (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  let repo: VisitsRepository;
  const p = (i: number): string => (onPostgres() ? `$${i}` : '?');
  const head = async (): Promise<number> => {
    const [row] = await db.query<{ s: number | string }[]>(`SELECT change_seq AS s FROM clients WHERE id = ${p(1)}`, [1001]);
    return Number(row.s);
  };
  const write = (visits: number): Promise<unknown> =>
    db.query(`UPDATE clients SET change_seq = change_seq + ${visits}, data_version = data_version + 1 WHERE id = ${p(1)}`, [1001]);
  const tick = (): Promise<unknown> => new Promise((resolve) => setTimeout(resolve, 5));

  beforeAll(async () => {
    db = await migratedUpTo(config, 'RecordSequenceBlocks');
    repo = new VisitsRepository(db, undefined as unknown as WebhookOutbox);
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('refuses a token past the point of a backup of the release before, restored and migrated, after the next write too; one of before that point reads on', async () => {
    await db.query(`INSERT INTO clients (id, name, data_version, change_seq) VALUES (${p(1)}, ${p(2)}, 0, 0)`, [1001, 'Acme Dining']);
    await write(5);
    // The backup's point: a token there, and one inside the write before it.
    const backup = await head();
    await tick();
    // Written after the backup, by either release: a partner holds a token past it.
    await write(3);
    const lost = await head();
    // The restore: the client's row as the backup had it, then this release's migration.
    await db.query(`UPDATE clients SET change_seq = ${p(1)} WHERE id = ${p(2)}`, [backup, 1001]);
    await db.runMigrations({ transaction: 'each' });
    await tick();
    await write(2);
    expect(await head()).toBeGreaterThan(lost);
    expect(await repo.gaveOutFeedPosition(1001, lost)).toBe(false);
    for (const known of [backup - 3, backup - 1, backup, (await head()) - 2, await head()]) {
      expect([known, await repo.gaveOutFeedPosition(1001, known)]).toEqual([known, true]);
    }
  });
});
