import type { DataSource } from 'typeorm';
import { openDataSource } from '../../src/database/migration-tools.js';
import { VisitsRepository } from '../../src/visits/visits.repository.js';
import type { WebhookOutbox } from '../../src/webhooks/webhook-outbox.js';
import { statementsOf } from '../helpers/statements.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * The removals of a filtered feed page (`data.removed`) are read in the order of the
 * departures' primary key and stop at Take. After a branch of many visits moved to another
 * brand, PostgreSQL's own plan for the join of departures and visits read every departure
 * after the token (its statistics take "the visit is outside the brand now" for rare), looked
 * up each one's visit and later departures, and sorted them: on every page until the token
 * passed the move. Priced on every departure the range scans, the checks also took a read for
 * a brand with no departures over the JIT's threshold (jit_above_cost), whose compilation cost
 * ten times the read.
 */
describe('the removals of a filtered feed page on PostgreSQL', () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  const VISITS = 40_000;
  /** The visits of the branch moved from brand 5 to brand 7: written again after every other. */
  const MOVED = 12_000;
  const TAKE = 1000;

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    await db.query(`INSERT INTO clients (id, name, change_seq) VALUES (1, 'One', $1)`, [VISITS + MOVED]);
    await db.query(`INSERT INTO brands (id, client_id, name) VALUES (5, 1, 'Five'), (6, 1, 'Six'), (7, 1, 'Seven')`);
    await db.query(`INSERT INTO branches (id, client_id, brand_id, name) VALUES ('B-1', 1, 7, 'Leeds'), ('B-2', 1, 5, 'York'), ('B-3', 1, 6, 'Hull')`);
    // Brand 5's visits, a tenth of them brand 6's (which no write moved); the first MOVED are
    // the moved branch's, written again by the move at the last sequences, each with its departure.
    await db.query(
      `INSERT INTO visits (id, client_id, brand_id, branch_id, visit_type, questionnaire_type, visit_score, visit_date, visit_date_time,
         modification_date, sections, change_seq, changed_at)
       SELECT g, 1, CASE WHEN g <= $2 THEN 7 WHEN g % 10 = 0 THEN 6 ELSE 5 END, CASE WHEN g <= $2 THEN 'B-1' WHEN g % 10 = 0 THEN 'B-3' ELSE 'B-2' END,
         'MV', 'Q', 50, '2026-01-01', '2026-01-01T12:00:00', '2026-01-01T13:00:00', '[]',
         CASE WHEN g <= $2 THEN $1 + g ELSE g END, now()
       FROM generate_series(1, $1::integer) g`,
      [VISITS, MOVED],
    );
    await db.query(
      `INSERT INTO visit_departures (client_id, change_seq, visit_id, brand_id, visit_type, new_brand_id, new_visit_type)
       SELECT 1, $1 + g, g, 5, 'MV', 7, 'MV' FROM generate_series(1, $2::integer) g`,
      [VISITS, MOVED],
    );
    // What autovacuum does soon after such a load.
    await db.query('VACUUM (ANALYZE) visits, visit_departures');
  });

  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  interface Plan {
    /** The planner's cost of the whole statement: what the JIT's thresholds are compared with. */
    cost: number;
    /** Rows given by the scans of each table (those the filters removed included), and whether the plan sorts. */
    read: Record<string, number>;
    sorts: boolean;
  }

  async function planOf(sql: string, params: unknown[]): Promise<Plan> {
    const [{ 'QUERY PLAN': plan }] = await db.query<{ 'QUERY PLAN': { Plan: Record<string, unknown> }[] }[]>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
    const read: Record<string, number> = {};
    let sorts = false;
    const walk = (node: Record<string, unknown>): void => {
      if (node['Node Type'] === 'Sort') sorts = true;
      const relation = node['Relation Name'];
      if (typeof relation === 'string') {
        const loops = Number(node['Actual Loops'] ?? 1);
        read[relation] = (read[relation] ?? 0) + (Number(node['Actual Rows'] ?? 0) + Number(node['Rows Removed by Filter'] ?? 0)) * loops;
      }
      for (const child of (node.Plans as Record<string, unknown>[] | undefined) ?? []) walk(child);
    };
    walk(plan[0].Plan);
    return { cost: Number(plan[0].Plan['Total Cost']), read, sorts };
  }

  /** The statement the repository runs for one page's removals, with its parameters and answer. */
  async function departuresOf(brandId: number, after: number): Promise<{ sql: string; params: unknown[]; rows: { seq: number; visitId: number }[] }> {
    const { result: rows, statements } = await statementsOf(db, () =>
      new VisitsRepository(db, {} as WebhookOutbox).departures({
        clientId: 1,
        after,
        upTo: VISITS + MOVED,
        brandIds: [brandId],
        visitTypes: null,
        take: TAKE,
      }),
    );
    expect(statements).toHaveLength(1);
    return { ...statements[0], rows };
  }

  /** The join form the repository ran before, which PostgreSQL planned as it liked. */
  const joinForm = `SELECT dep.change_seq AS seq, dep.visit_id AS "visitId" FROM visit_departures dep JOIN visits v ON v.id = dep.visit_id
    WHERE dep.client_id = $1 AND dep.change_seq > $2 AND dep.change_seq <= $3
    AND dep.brand_id IN ($4) AND (dep.new_brand_id IS NULL OR dep.new_brand_id NOT IN ($4))
    AND (v.brand_id IS NULL OR v.brand_id NOT IN ($4))
    AND NOT EXISTS (SELECT 1 FROM visit_departures later WHERE later.client_id = dep.client_id AND later.visit_id = dep.visit_id
      AND later.change_seq > dep.change_seq AND later.brand_id IN ($4) AND (later.new_brand_id IS NULL OR later.new_brand_id NOT IN ($4)))
    ORDER BY dep.change_seq LIMIT $5`;

  async function jitAboveCost(): Promise<number> {
    const [{ cost }] = await db.query<{ cost: string }[]>(`SELECT current_setting('jit_above_cost') AS cost`);
    return Number(cost);
  }

  it.each([
    ['before the move', 0],
    ['inside the move', VISITS + MOVED / 2],
  ])('of a brand a move took many visits from, read from %s, stop at Take in the departures\' order', async (_, after) => {
    const { sql, params, rows } = await departuresOf(5, after);
    const expected = Math.min(TAKE, VISITS + MOVED - Math.max(after, VISITS));
    expect(rows).toEqual(Array.from({ length: expected }, (__, i) => ({ seq: Math.max(after, VISITS) + i + 1, visitId: Math.max(after, VISITS) - VISITS + i + 1 })));
    expect(rows).toEqual(await db.query<{ seq: string; visitId: string }[]>(joinForm, [1, after, VISITS + MOVED, 5, TAKE]).then((r) => r.map((x) => ({ seq: Number(x.seq), visitId: Number(x.visitId) }))));

    const plan = await planOf(sql, params);
    expect(plan.sorts).toBe(false);
    expect(plan.read.visit_departures).toBeLessThanOrEqual(2 * TAKE);
    expect(plan.read.visits).toBeLessThanOrEqual(TAKE);
    expect(plan.cost).toBeLessThan(await jitAboveCost());
    // The data provokes the plan this guards against: the join form reads every departure after the token.
    const join = await planOf(joinForm, [1, after, VISITS + MOVED, 5, TAKE]);
    expect(join.read.visit_departures).toBeGreaterThanOrEqual(VISITS + MOVED - Math.max(after, VISITS));
  });

  it('of a brand with no departures are none, read without the JIT', async () => {
    const { sql, params, rows } = await departuresOf(6, 0);
    expect(rows).toEqual([]);
    const plan = await planOf(sql, params);
    expect(plan.read.visits ?? 0).toBe(0);
    expect(plan.cost).toBeLessThan(await jitAboveCost());
  });
});
