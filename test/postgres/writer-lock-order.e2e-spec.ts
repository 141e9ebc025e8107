import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { BranchesRepository } from '../../src/branches/branches.repository.js';
import { Branch } from '../../src/branches/entities/branch.entity.js';
import { DataSource } from 'typeorm';
import { ClientsService } from '../../src/clients/clients.service.js';
import { eventually } from '../helpers/eventually.js';
import { backendPid, queuedBehind, withConnection } from '../helpers/pg-locks.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { importBranches, importVisits, seedVisits, type VisitRecord } from '../helpers/visits-fixture.js';

/**
 * Writers of one client's data at once on PostgreSQL: a visits import, a branches import and
 * `brands add` each take the client's row before anything else, so they queue there instead
 * of each holding a row the other waits for (a deadlock, which ended one of them with nothing
 * or part of its file written).
 */
describe('writers of one client at once (postgres)', () => {
  let t: TestApp;
  let visits: VisitRecord[];
  beforeAll(async () => {
    t = await startTestApp();
    ({ visits } = await seedVisits(t));
  });
  afterAll(async () => {
    await t.close();
  });

  /**
   * A visits import's transaction as it holds its locks: the client's row first (its write
   * sequence), then, writing visits, a key-share lock on the branch and brand each refers to.
   * `write` runs while that transaction holds the client's row and is waited for once it waits;
   * the transaction then takes its key-share locks and commits. With the writers taking the
   * client's row first, `write` waits there holding nothing the import needs; taking it last,
   * it held the branch or brand and PostgreSQL ended one of the two (deadlock detected).
   */
  async function besideAVisitsImport(branchId: string, brandId: number, write: () => Promise<unknown>): Promise<void> {
    const db = t.app.get(DataSource);
    const visitsImport = db.createQueryRunner();
    await visitsImport.connect();
    try {
      await visitsImport.startTransaction();
      await visitsImport.query('UPDATE clients SET change_seq = change_seq + 1, data_version = data_version + 1 WHERE id = $1', [1001]);
      const writing = write();
      writing.catch(() => undefined);
      // Until the writer waits for a lock (of the client's row, or before the fix of the branch it held).
      await eventually(
        () => db.query<{ n: string }[]>("SELECT COUNT(*) AS n FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND datname = current_database()"),
        (rows) => Number(rows[0].n) > 0,
        30_000,
        20,
      );
      await visitsImport.query('SELECT 1 FROM branches WHERE id = $1 FOR KEY SHARE', [branchId]);
      await visitsImport.query('SELECT 1 FROM brands WHERE id = $1 FOR KEY SHARE', [brandId]);
      await visitsImport.commitTransaction();
      await writing;
    } finally {
      if (visitsImport.isTransactionActive) await visitsImport.rollbackTransaction();
      await visitsImport.release();
    }
  }

  it('a branches import beside a visits import of the same client waits for it, and both complete', async () => {
    const branches = t.app.get(BranchesRepository);
    const own = visits.find((v) => v.clientId === 1001 && v.brandId === 5)!;
    const [branch] = await branches.findByIds([own.branchId as string]);
    await besideAVisitsImport(branch.id, 5, () => branches.upsertMany([Object.assign(new Branch(), branch, { name: 'Renamed meanwhile' })]));
    expect((await branches.findByIds([branch.id]))[0].name).toBe('Renamed meanwhile');
  });

  it('brands add beside a visits import of the same client waits for it, and both complete', async () => {
    const own = visits.find((v) => v.clientId === 1001 && v.brandId === 5)!;
    await besideAVisitsImport(own.branchId as string, 5, () => clients().addBrand(1001, 5, 'Renamed meanwhile'));
    expect((await clients().findBrand(5))?.name).toBe('Renamed meanwhile');
  });

  it('a visits import, branches imports and brands add of one client, all at once, all complete', async () => {
    const own = visits.filter((v) => v.clientId === 1001);
    const branches = t.app.get(BranchesRepository);
    const stored = await branches.findByIds([...new Set(own.map((v) => v.branchId as string))]);
    for (let round = 0; round < 3; round++) {
      const renamed = stored.map((b) => Object.assign(new Branch(), b, { name: `${b.name} r${round}` }));
      await Promise.all([
        importVisits(t, own.map((v) => ({ ...v, visitScore: round }))),
        branches.upsertMany(renamed),
        clients().addBrand(1001, 5, `Acme Grill r${round}`),
        branches.upsertMany([...renamed].reverse()),
      ]);
    }
    expect((await clients().findBrand(5))?.name).toBe('Acme Grill r2');
  });

  it('brands add of one brand id for two clients at once: one wins, the other is refused, the brand never moves', async () => {
    for (let round = 0; round < 5; round++) {
      const id = 900 + round;
      const results = await Promise.allSettled([clients().addBrand(1001, id, 'Mine'), clients().addBrand(1002, id, 'Theirs')]);
      const won = results.filter((r) => r.status === 'fulfilled');
      expect(won).toHaveLength(1);
      const refused = results.find((r) => r.status === 'rejected');
      expect(String((refused as PromiseRejectedResult).reason)).toMatch(/belong(s)? to (another )?client/);
      const owner = (won[0] as PromiseFulfilledResult<{ clientId: number }>).value.clientId;
      expect((await clients().findBrand(id))?.clientId).toBe(owner);
    }
  });

  it('writes nothing for a visit re-imported as it is while a branches import moves its branch to another brand', async () => {
    const own = visits.find((v) => v.clientId === 1001 && v.brandId === 5)!;
    const branchId = own.branchId as string;
    // Stored as the record says (the tests above changed it), so that importing it again changes nothing.
    await importVisits(t, [own]);
    await clients().addBrand(1001, 77, 'Moved to');
    const [branch] = await t.app.get(BranchesRepository).findByIds([branchId]);
    const file = join(mkdtempSync(join(tmpdir(), 'branch-move-')), 'branches.json');
    writeFileSync(file, JSON.stringify([{ id: branch.id, name: branch.name, branchCode: branch.branchCode, brandId: 77 }]));
    const db = t.app.get(DataSource);
    const sequence = async (): Promise<number> => Number((await db.query<{ s: string }[]>('SELECT change_seq AS s FROM clients WHERE id = 1001'))[0].s);
    const before = await sequence();

    await withConnection(db, async (holder) => {
      const holderPid = await backendPid(holder);
      // Another writer of the client holds its row: the move queues first, then the re-import, which has read the branch before the move.
      await holder.startTransaction();
      await holder.query('UPDATE clients SET data_version = data_version WHERE id = 1001');
      const moving = importBranches(t, 1001, file);
      moving.catch(() => undefined);
      expect(await queuedBehind(db, holderPid, 1)).toBe(1);
      const reimporting = importVisits(t, [own]);
      reimporting.catch(() => undefined);
      expect(await queuedBehind(db, holderPid, 2)).toBe(2);
      await holder.commitTransaction();
      expect((await moving).rejected).toEqual([]);
      await reimporting;
    });
    // The move wrote the visit (and its departure from brand 5) once; the re-import, compared with the visit as moved, nothing.
    const [departure] = await db.query<{ s: string }[]>('SELECT change_seq AS s FROM visit_departures WHERE visit_id = $1 AND new_brand_id = 77', [own.visitId]);
    const [visit] = await db.query<{ s: string }[]>('SELECT change_seq AS s FROM visits WHERE id = $1', [own.visitId]);
    expect(visit.s).toBe(departure.s);
    expect(await sequence()).toBeGreaterThan(before);
    expect((await db.query<{ brand_id: number }[]>('SELECT brand_id FROM visits WHERE id = $1', [own.visitId]))[0].brand_id).toBe(77);
  });

  const clients = () => t.app.get(ClientsService);
});
