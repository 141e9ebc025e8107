import type { DataSource } from 'typeorm';
import { openDataSource } from '../../src/database/migration-tools.js';
import { VisitsRepository } from '../../src/visits/visits.repository.js';
import type { WebhookOutbox } from '../../src/webhooks/webhook-outbox.js';
import { statementsOf } from '../helpers/statements.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * Where a feed's first call (`Since`) starts is read from the writes since `Since` alone, in
 * the index on (client_id, changed_at, change_seq). PostgreSQL's own plan for MIN(change_seq)
 * walked the index on (client_id, change_seq) from the client's first write, reading the table
 * row of each, until one was late enough: every write before `Since`, the client's whole
 * history (a second at a million visits).
 */
describe('the change feed start on PostgreSQL', () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  const VISITS = 60_000;
  const HOUR = 3_600_000;
  // One write an hour-ish, ending now: sequence and write time rise together, as they do.
  const first = Date.now() - VISITS * (HOUR / 1000);
  const writtenAt = (seq: number): Date => new Date(first + seq * (HOUR / 1000));

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One')`);
    await db.query(`INSERT INTO branches (id, client_id, name) VALUES ('B-1', 1, 'Leeds')`);
    await db.query(
      `INSERT INTO visits (id, client_id, branch_id, visit_type, questionnaire_type, visit_score, visit_date, visit_date_time,
         modification_date, sections, change_seq, changed_at)
       SELECT g, 1, 'B-1', 'MV', 'Q', 50, '2026-01-01', '2026-01-01T12:00:00', '2026-01-01T13:00:00', '[]', g,
         to_timestamp(($1::double precision + g * $2::double precision) / 1000)
       FROM generate_series(1, $3::integer) g`,
      [first, HOUR / 1000, VISITS],
    );
    // What autovacuum does soon after such a load: statistics, and a visibility map for index-only scans.
    await db.query('VACUUM (ANALYZE) visits');
  });

  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  /** The names of the indexes a statement's plan reads, and the rows its scans gave. */
  async function planOf(sql: string, params: unknown[]): Promise<{ indexes: string[]; rows: number }> {
    const [{ 'QUERY PLAN': plan }] = await db.query<{ 'QUERY PLAN': unknown[] }[]>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
    const indexes: string[] = [];
    let rows = 0;
    const walk = (node: Record<string, unknown>): void => {
      if (typeof node['Index Name'] === 'string') indexes.push(node['Index Name']);
      if (/^(Seq|Index|Index Only|Bitmap Heap) Scan$/.test(String(node['Node Type']))) rows += Number(node['Actual Rows'] ?? 0) + Number(node['Rows Removed by Filter'] ?? 0);
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk((plan[0] as { Plan: Record<string, unknown> }).Plan);
    return { indexes, rows };
  }

  it.each([
    ['a tenth', 0.9],
    ['a quarter', 0.75],
  ])('reads only the writes since Since when they are %s of the history', async (_, at) => {
    const seq = Math.floor(VISITS * at);
    const since = writtenAt(seq);
    const { result: start, statements } = await statementsOf(db, () => new VisitsRepository(db, {} as WebhookOutbox).changesStart(1, since));
    // Just before the first write at or after Since.
    const [{ s }] = await db.query<{ s: string }[]>('SELECT MIN(change_seq) AS s FROM visits WHERE client_id = 1 AND changed_at >= $1', [since]);
    expect(start).toBe(Number(s) - 1);

    expect(statements).toHaveLength(1);
    const { indexes, rows } = await planOf(statements[0].sql, statements[0].params);
    expect(indexes).toEqual(['ix_visits_client_changed_at']);
    expect(rows).toBeLessThanOrEqual(VISITS - seq + 1);
    // The data provokes the plan this guards against: the plain MIN walks the other index past every earlier write.
    const plain = await planOf('SELECT MIN(change_seq) AS s FROM visits WHERE client_id = $1 AND changed_at >= $2', [1, since]);
    expect(plain.indexes).toEqual(['ix_visits_client_change']);
    expect(plain.rows).toBeGreaterThanOrEqual(seq - 1);
  });

  it('starts at the last write when none was written since Since', async () => {
    await db.query('UPDATE clients SET change_seq = $1 WHERE id = 1', [VISITS]);
    const start = await new VisitsRepository(db, {} as WebhookOutbox).changesStart(1, new Date(Date.now() + HOUR));
    expect(start).toBe(VISITS);
  });
});
