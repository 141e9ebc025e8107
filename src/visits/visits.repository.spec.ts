import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { loadConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import type { WebhookOutbox } from '../webhooks/webhook-outbox.js';
import { VisitsRepository } from './visits.repository.js';

/** SQLite's plans of the page queries, on the schema the migrations make. */
describe('VisitsRepository on SQLite', () => {
  let dir: string;
  let db: DataSource;
  const statements: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'visits-repository-'));
    db = await new DataSource(dataSourceOptions(loadConfig({ DATA_DIR: dir }))).initialize();
    await db.runMigrations();
    // The statements the repository prepares for its row by row reads.
    const connection = (db.driver as unknown as { databaseConnection: Database }).databaseConnection;
    const prepare = connection.prepare.bind(connection);
    connection.prepare = ((sql: string) => {
      statements.push(sql);
      return prepare(sql);
    });
  });

  afterAll(async () => {
    await db.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The steps of the statement's query plan, with every parameter 1. */
  async function plan(sql: string): Promise<string[]> {
    const params = Array.from({ length: (sql.match(/\?/g) ?? []).length }, () => 1);
    const rows = await db.query<{ detail: string }[]>(`EXPLAIN QUERY PLAN ${sql}`, params);
    return rows.map((row) => row.detail);
  }

  it.each([
    ['a page from the start of a range', { after: undefined, brandIds: null, visitTypes: null }],
    ['a page after a mark, of some brands and types', { after: { visitDateTime: '2026-10-01T10:00:00', id: 5 }, brandIds: [1, 2], visitTypes: ['MV'] }],
  ])('reads %s in page order without sorting the documents', async (_, selection) => {
    statements.length = 0;
    const repo = new VisitsRepository(db, {} as WebhookOutbox);
    await repo.page({ clientId: 1, from: '2026-10-01', until: '2026-11-01', skip: 3, take: 100, plus: true, ...selection }, () => undefined);
    expect(statements).toHaveLength(1);
    const steps = await plan(statements[0]);
    expect(steps.join('\n')).toMatch(/SEARCH visits USING COVERING INDEX ix_visits_client_time/);
    expect(steps.join('\n')).toMatch(/SEARCH d USING INDEX/);
    expect(steps.filter((step) => step.includes('TEMP B-TREE'))).toEqual([]);
    expect(statements[0]).toMatch(/ORDER BY page\.visit_date_time, page\.id$/);
  });

  it('reads a page of the change feed in write order without sorting the documents', async () => {
    statements.length = 0;
    const repo = new VisitsRepository(db, {} as WebhookOutbox);
    await repo.changes({ clientId: 1, after: 10, brandIds: [3], visitTypes: null, take: 500, plus: false }, () => undefined);
    expect(statements).toHaveLength(1);
    const steps = await plan(statements[0]);
    expect(steps.join('\n')).toMatch(/SEARCH visits USING (COVERING )?INDEX ix_visits_client_change/);
    expect(steps.filter((step) => step.includes('TEMP B-TREE'))).toEqual([]);
    expect(statements[0]).toMatch(/ORDER BY page\.change_seq$/);
  });
});
