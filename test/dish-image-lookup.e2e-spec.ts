import type { DataSource } from 'typeorm';
import { openDataSource } from '../src/database/migration-tools.js';
import type { ImageStorage } from '../src/menus/image-storage.js';
import { MenusRepository } from '../src/menus/menus.repository.js';
import { statementsOf } from './helpers/statements.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

/**
 * Serving an image (GET /menus/dishes/images/{imageId}) finds the dish that shows it, and so
 * its menu's client, in the index on dishes.image_id: without it every image served read
 * every dish of every client (a sequential scan, 60 ms at 350,000 dishes on PostgreSQL).
 */
describe('the dish of an image', () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  const DISHES = 20_000;
  const imageId = (n: number): string => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One'), (2, 'Two')`);
    await db.query(`INSERT INTO menus (id, client_id, name, start_date) VALUES (1, 1, 'Lunch', '2026-01-01'), (2, 2, 'Dinner', '2026-01-01')`);
    // Many dishes with images, of both clients: what a sequential scan would read.
    const series = onPostgres() ? `generate_series(1, ${DISHES}) AS s(n)` : `(WITH RECURSIVE s(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM s WHERE n < ${DISHES}) SELECT n FROM s)`;
    const id = onPostgres() ? `'00000000-0000-4000-8000-' || lpad(n::text, 12, '0')` : `'00000000-0000-4000-8000-' || substr('000000000000' || n, -12)`;
    await db.query(`INSERT INTO dish_images (id, content_type, bytes, width, height, sha256, data) SELECT ${id}, 'image/png', 1, 1, 1, 'x', NULL FROM ${series}`);
    await db.query(
      `INSERT INTO dishes (menu_id, code, description, type, keywords, image_id) SELECT 1 + n % 2, 'D-' || n, 'Dish', 'Main', '[]', ${id} FROM ${series}`,
    );
    // PostgreSQL plans by statistics, which autovacuum keeps; the service never analyzes SQLite.
    if (onPostgres()) await db.query('VACUUM (ANALYZE) dishes, dish_images, menus');
  });

  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('is found by the index on the dishes image, not by reading every dish', async () => {
    const repo = new MenusRepository(db, {} as ImageStorage);
    const { result: owned, statements } = await statementsOf(db, () => repo.ownedImage(imageId(4321)));
    expect(owned).toMatchObject({ clientId: 2, image: { id: imageId(4321) } });
    expect(statements).toHaveLength(1);
    const { sql, params } = statements[0];
    if (onPostgres()) {
      type PlanNode = { 'Node Type': string; 'Relation Name'?: string; 'Index Name'?: string; Plans?: PlanNode[] };
      const [{ 'QUERY PLAN': plan }] = await db.query<{ 'QUERY PLAN': { Plan: PlanNode }[] }[]>(`EXPLAIN (FORMAT JSON) ${sql}`, params);
      const scans: { type: string; relation: string; index?: string }[] = [];
      const walk = (node: PlanNode): void => {
        if (node['Relation Name']) scans.push({ type: node['Node Type'], relation: node['Relation Name'], index: node['Index Name'] });
        for (const child of node.Plans ?? []) walk(child);
      };
      walk(plan[0].Plan);
      expect(scans.filter((scan) => scan.relation === 'dishes')).toEqual([{ type: 'Index Scan', relation: 'dishes', index: 'ix_dishes_image' }]);
    } else {
      const steps = (await db.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${sql}`, params)).map((row) => row.detail);
      expect(steps.join('\n')).toMatch(/SEARCH d USING (COVERING )?INDEX ix_dishes_image \(image_id=\?\)/);
      expect(steps.filter((step) => /^SCAN d\b/.test(step))).toEqual([]);
    }
  });

  it('is none for an id no image has', async () => {
    expect(await new MenusRepository(db, {} as ImageStorage).ownedImage(imageId(DISHES + 1))).toBeNull();
  });
});
