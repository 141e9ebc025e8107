import type { DataSource } from 'typeorm';
import { openDataSource } from '../../src/database/migration-tools.js';
import type { WebhookOutbox } from '../../src/webhooks/webhook-outbox.js';
import { VisitsRepository } from '../../src/visits/visits.repository.js';
import { cli } from '../helpers/cli.js';
import { migratedUpTo } from '../helpers/migrated.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * RecordSequenceBlocks run while a replica of the release before writes (a rollout): the
 * numbers of a write that took them before the migration and committed after it are given
 * out as any others, and a token naming them reads on after later writes.
 */
describe('RecordSequenceBlocks during a write of the release before (postgres)', () => {
  const { config, env, drop } = isolatedConfig();
  let db: DataSource;
  let writer: DataSource;

  beforeAll(async () => {
    db = await migratedUpTo(config, 'RecordSequenceBlocks');
    writer = await openDataSource(config);
    await db.query(`INSERT INTO clients (id, name, data_version, change_seq) VALUES (1001, 'Acme Dining', 0, 0)`);
    await db.query('UPDATE clients SET change_seq = change_seq + 5, data_version = data_version + 1 WHERE id = 1001');
  });
  afterAll(async () => {
    await writer.destroy();
    await db.destroy();
    await drop();
  });

  it('takes the numbers of a write of the release before that committed while the migration ran', async () => {
    const runner = writer.createQueryRunner();
    await runner.startTransaction();
    // The write of the release before: its numbers taken, not yet committed.
    await runner.query('UPDATE clients SET change_seq = change_seq + 4, data_version = data_version + 1 WHERE id = 1001');
    const [{ s }] = (await runner.query('SELECT change_seq AS s FROM clients WHERE id = 1001')) as { s: string }[];
    const written = Number(s);
    const migrating = cli(['migrations', 'run'], env);
    // The migration waits for the write to end before it reads the clients' sequences (its lock
    // of the table): seen waiting, the write commits.
    const waiting = async (): Promise<boolean> => {
      const rows = await db.query<unknown[]>(
        "SELECT 1 FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query ILIKE 'LOCK TABLE%clients%' AND datname = current_database()",
      );
      return rows.length > 0;
    };
    const until = Date.now() + 60_000;
    while (!(await waiting())) {
      if (Date.now() > until) throw new Error('the migration never waited for the write of the release before');
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
    await runner.commitTransaction();
    await runner.release();
    expect((await migrating).code).toBe(0);
    // A write of this release after it.
    await new Promise((resolve) => setTimeout(resolve, 5));
    await db.query('UPDATE clients SET change_seq = change_seq + 2, data_version = data_version + 1 WHERE id = 1001');
    const repo = new VisitsRepository(db, undefined as unknown as WebhookOutbox);
    for (const known of [written - 3, written]) expect([known, await repo.gaveOutFeedPosition(1001, known)]).toEqual([known, true]);
  });
});
