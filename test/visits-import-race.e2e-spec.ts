import { DataSource } from 'typeorm';
import { inTransaction } from '../src/database/transaction.js';
import { VisitsRepository } from '../src/visits/visits.repository.js';
import { eventually } from './helpers/eventually.js';
import { onPostgres } from './helpers/test-config.js';
import { importVisits, startVisitsApp, type VisitsApp } from './helpers/visits-fixture.js';

/**
 * A re-import that waits for another writer of the client compares the visit with what that
 * writer committed, not with what it read before waiting: a changed visit's modificationDate
 * only moves forward, and a first feed call's Since finds what committed after it.
 */
describe(`a visits import waiting for another writer of the client (${process.env.TEST_DATABASE})`, () => {
  let app: VisitsApp;
  beforeAll(async () => {
    app = await startVisitsApp();
  });
  afterAll(async () => {
    await app.t.close();
  });

  it("weighs a re-import against what the writer it waited for wrote: the modificationDate moves on past that writer's", async () => {
    const { t, visits } = app;
    const db = t.app.get(DataSource);
    const repo = t.app.get(VisitsRepository);
    const original = visits.find((v) => v.clientId === 1001)!;
    const [before] = await repo.visitsById(db.manager, [original.visitId]);

    // Writer A: the visit changed, with a modificationDate far ahead, in a transaction held open.
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let written!: (pid: number | null) => void;
    const holding = new Promise<number | null>((resolve) => (written = resolve));
    const a = inTransaction(db, async (tx) => {
      const [stored] = await repo.visitsById(tx, [original.visitId]);
      await repo.writeBatch(tx, [Object.assign(stored, { visitScore: 11.25, modificationDate: '2099-01-01T00:00:00' })]);
      written(onPostgres() ? Number((await tx.query<{ pid: number }[]>('SELECT pg_backend_pid() AS pid'))[0].pid) : null);
      await held;
    });
    const pid = await holding;

    // Writer B: a re-import of the visit with another change and no modificationDate of its own.
    const { modificationDate: _dropped, ...record } = original;
    const b = importVisits(t, [{ ...record, visitScore: 22.5 }]);
    if (pid !== null) {
      // B is waiting for A's lock on the client (on SQLite its transaction is queued behind A's).
      await eventually(
        async () => (await db.query<{ n: number }[]>('SELECT COUNT(*)::int AS n FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [pid]))[0].n,
        (n) => n > 0,
      );
    }
    const feedStart = new Date();
    release();
    await Promise.all([a, b]);

    const [after] = await repo.visitsById(db.manager, [original.visitId]);
    expect({ score: after.visitScore, modificationDate: after.modificationDate }).toEqual({ score: 22.5, modificationDate: '2099-01-01T00:00:01' });
    expect(after.changeSeq).toBeGreaterThan(before.changeSeq);
    // B is dated from when it held the client's lock, after A committed, not from before its wait.
    expect(after.changedAt?.getTime()).toBeGreaterThanOrEqual(feedStart.getTime());
  });
});
