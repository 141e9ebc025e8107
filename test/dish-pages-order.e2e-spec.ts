import { jest } from '@jest/globals';
import type { DataSource } from 'typeorm';
import { openDataSource } from '../src/database/migration-tools.js';
import type { ImageStorage } from '../src/menus/image-storage.js';
import { MenusRepository, UNORDERED } from '../src/menus/menus.repository.js';
import { statementsOf } from './helpers/statements.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

/**
 * A page of a menu's dishes (GET /menus/dishes) reads them in the index on (menu_id,
 * sort_order, id), in its order, and stops at the page's size: the dishes with a display order
 * after the page's position, then those without one. Sorted by COALESCE(sort_order, …), id,
 * which no index holds, every page read and sorted the whole menu (65 ms at 50,100 dishes on
 * PostgreSQL). The order, and the positions tokens hold, are those of that expression still.
 */
describe('the pages of a menu\'s dishes', () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  const DISHES = 6_000;
  const SIZE = 50;

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One')`);
    await db.query(`INSERT INTO menus (id, client_id, name, start_date) VALUES (1, 1, 'Lunch', '2026-01-01'), (2, 1, 'Dinner', '2026-01-01'), (3, 1, 'Brunch', '2026-01-01')`);
    // Orders repeated (ties go by id), negative, the largest and smallest a dish may have, and
    // none (a tenth); every fifth dish is the other menu's, interleaved by id.
    const series = onPostgres() ? `generate_series(1, ${DISHES}) AS s(n)` : `(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${DISHES}) SELECT n FROM s)`;
    await db.query(
      `INSERT INTO dishes (menu_id, code, description, type, keywords, sort_order)
       SELECT CASE WHEN n % 5 = 0 THEN 2 ELSE 1 END, 'D-' || n, 'Dish', 'Main', '[]',
         CASE WHEN n % 10 = 1 THEN NULL WHEN n = 2 THEN 2147483647 WHEN n = 3 THEN -2147483648 WHEN n = 4 THEN 2147483647 ELSE (n * 7919) % 400 - 100 END
       FROM ${series}`,
    );
    // PostgreSQL plans by statistics, which autovacuum keeps; the service never analyzes SQLite.
    if (onPostgres()) await db.query('VACUUM (ANALYZE) dishes, dish_images, menus');
  });

  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  /** The menu's dish ids in the order of the pages, as the expression gives it. */
  async function expectedOrder(menuId: number): Promise<number[]> {
    const rows = await db.query<{ id: number | string }[]>(
      `SELECT id FROM dishes WHERE menu_id = ${onPostgres() ? '$1' : '?'} ORDER BY COALESCE(sort_order, ${UNORDERED}), id`,
      [menuId],
    );
    return rows.map((row) => Number(row.id));
  }

  /** Every page of the menu, from `after`, each read as the service reads it (a dish more than the page, to know whether one follows). */
  async function walk(menuId: number, after: [number, number] | null = null): Promise<{ ids: number[]; pages: number }> {
    const repo = new MenusRepository(db, {} as ImageStorage);
    const ids: number[] = [];
    let pages = 0;
    for (let position = after; ; pages++) {
      const rows = await repo.dishes(menuId, position, SIZE + 1);
      const items = rows.slice(0, SIZE);
      ids.push(...items.map((row) => row.dish.id));
      if (rows.length <= SIZE) return { ids, pages: pages + 1 };
      const last = items.at(-1)!.dish;
      position = [last.order ?? UNORDERED, last.id];
    }
  }

  it('come in display order (dishes without one last), ties by id, each dish once', async () => {
    for (const menuId of [1, 2]) expect((await walk(menuId)).ids).toEqual(await expectedOrder(menuId));
  });

  it('go on from any position a token holds, one inside the ordered dishes, the last of them, or among those without an order', async () => {
    const order = await expectedOrder(1);
    const [rows] = [await db.query<{ id: number | string; sort_order: number | string | null }[]>('SELECT id, sort_order FROM dishes WHERE menu_id = 1')];
    const orderOf = new Map(rows.map((row) => [Number(row.id), row.sort_order === null ? UNORDERED : Number(row.sort_order)]));
    const lastOrdered = order.findLastIndex((id) => orderOf.get(id)! < UNORDERED);
    for (const at of [0, 1234, lastOrdered - 1, lastOrdered, lastOrdered + 1, order.length - 2]) {
      const id = order[at];
      expect((await walk(1, [orderOf.get(id)!, id])).ids).toEqual(order.slice(at + 1));
    }
    // A position between two orders, and past every dish.
    expect((await walk(1, [-50, 0])).ids).toEqual(order.filter((id) => orderOf.get(id)! >= -50));
    expect((await walk(1, [UNORDERED, order.at(-1)!])).ids).toEqual([]);
  });

  it('hold each dish once when a write takes a dish\'s order away between the reads of the ordered dishes and of those without one', async () => {
    const p = (n: number): string => (onPostgres() ? `$${n}` : '?');
    for (const [code, order] of [['B-1', 1], ['B-2', 2], ['B-3', null], ['B-4', null]] as const) {
      await db.query(`INSERT INTO dishes (menu_id, code, description, type, keywords, sort_order) VALUES (3, ${p(1)}, 'Dish', 'Main', '[]', ${p(2)})`, [code, order]);
    }
    const ids = await expectedOrder(3);
    const repo = new MenusRepository(db, {} as ImageStorage);
    // The page is read in two statements: between them an upload replaces the second dish
    // without an order. Read in one, the page held it once, as it was before or after the write.
    const reads = repo as unknown as { inIndexOrder: (...args: unknown[]) => Promise<unknown[]> };
    const read = reads.inIndexOrder.bind(repo);
    let writes = 0;
    const spy = jest.spyOn(reads, 'inIndexOrder').mockImplementation(async (...args: unknown[]) => {
      const rows = await read(...args);
      if (writes++ === 0) await db.query(`UPDATE dishes SET sort_order = NULL WHERE id = ${p(1)}`, [ids[1]]);
      return rows;
    });
    try {
      const page = (await repo.dishes(3, null, SIZE + 1)).map((row) => row.dish.id);
      expect(writes).toBe(2);
      expect(page).toEqual(ids);
    } finally {
      spy.mockRestore();
    }
  });

  it('are read in the index on (menu_id, sort_order, id) in its order, without reading or sorting the menu', async () => {
    const repo = new MenusRepository(db, {} as ImageStorage);
    const [{ id: lastOrderedId, sort_order: lastOrder }] = await db.query<{ id: number | string; sort_order: number | string }[]>(
      'SELECT id, sort_order FROM dishes WHERE menu_id = 1 AND sort_order IS NOT NULL ORDER BY sort_order DESC, id DESC LIMIT 1',
    );
    const [{ id: firstUnorderedId }] = await db.query<{ id: number | string }[]>('SELECT MIN(id) AS id FROM dishes WHERE menu_id = 1 AND sort_order IS NULL');
    const { statements } = await statementsOf(db, async () => {
      await repo.dishes(1, null, SIZE + 1);
      // Ordered dishes, then the first without an order on the same page, then only those without.
      await repo.dishes(1, [Number(lastOrder), Number(lastOrderedId)], SIZE + 1);
      await repo.dishes(1, [UNORDERED, Number(firstUnorderedId)], SIZE + 1);
    });
    expect(statements).toHaveLength(4);
    for (const { sql, params } of statements) {
      if (onPostgres()) {
        type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; 'Actual Rows'?: number; 'Rows Removed by Filter'?: number; Plans?: PlanNode[] };
        const [{ 'QUERY PLAN': plan }] = await db.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(`EXPLAIN (ANALYZE, FORMAT JSON) ${sql}`, params);
        const scans: { type: string; index?: string; read: number }[] = [];
        let sorts = false;
        const walkPlan = (node: PlanNode): void => {
          if (node['Node Type'] === 'Sort') sorts = true;
          if (node['Relation Name'] === 'dishes') scans.push({ type: node['Node Type'], index: node['Index Name'], read: (node['Actual Rows'] ?? 0) + (node['Rows Removed by Filter'] ?? 0) });
          for (const child of node.Plans ?? []) walkPlan(child);
        };
        walkPlan(plan[0].Plan);
        expect(sorts).toBe(false);
        expect(scans).toEqual([{ type: 'Index Scan', index: 'ix_dishes_menu_order', read: expect.any(Number) as number }]);
        expect(scans[0].read).toBeLessThanOrEqual(SIZE + 1);
      } else {
        const steps = (await db.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((row) => row.detail);
        expect(steps.join('\n')).toMatch(/SEARCH d USING INDEX ix_dishes_menu_order \(menu_id=\? AND /);
        expect(steps.filter((step) => /TEMP B-TREE|^SCAN d\b/.test(step))).toEqual([]);
      }
    }
  });
});
