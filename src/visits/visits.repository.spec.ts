import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Database } from 'better-sqlite3';
import { DataSource } from 'typeorm';
import { loadConfig } from '../config/app-config.js';
import { dataSourceOptions } from '../database/data-source-options.js';
import type { WebhookOutbox } from '../webhooks/webhook-outbox.js';
import { NameFragments, PageWriter } from './visit-json.js';
import { VisitsRepository } from './visits.repository.js';

/** SQLite's plans of the page queries, which write a page's visits in SQL, on the schema the migrations make (their pages: test/visit-pages-written.e2e-spec.ts). */
describe('VisitsRepository on SQLite', () => {
  let dir: string;
  let db: DataSource;
  const statements: string[] = [];

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'visits-repository-'));
    db = await new DataSource(dataSourceOptions(loadConfig({ DATA_DIR: dir }))).initialize();
    await db.runMigrations();
    // The statements the repository prepares for the pages it writes in SQL.
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

  const writer = (plus: boolean): PageWriter => new PageWriter(new NameFragments({ clientId: 0, clientName: '', brands: new Map(), branches: new Map() }), plus, 0);

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
    await repo.page({ clientId: 1, from: '2026-10-01', until: '2026-11-01', skip: 3, take: 100, plus: true, ...selection }, writer(true));
    expect(statements).toHaveLength(1);
    const steps = await plan(statements[0]);
    // The page's ids from the index alone, in their order, as the outer loop; then each document by its key.
    expect(steps[0]).toMatch(/^CO-ROUTINE page/);
    expect(steps[1]).toMatch(/SEARCH visits USING COVERING INDEX ix_visits_client_time/);
    expect(steps.slice(2)).toEqual(['SCAN page', expect.stringMatching(/^SEARCH d USING INDEX sqlite_autoindex_visit_documents_1 \(visit_id=\?\)$/)]);
    expect(steps.filter((step) => step.includes('TEMP B-TREE'))).toEqual([]);
    expect(statements[0]).toMatch(/CROSS JOIN visit_documents d ON d\.visit_id = page\.id$/);
  });

  it.each([
    ['a large page', (repo: VisitsRepository) => repo.page({ clientId: 1, from: '2026-10-01', until: '2026-11-01', skip: 3, take: 1000, plus: true, brandIds: null, visitTypes: null }, writer(true))],
    ['a large page of the change feed', (repo: VisitsRepository) => repo.changes({ clientId: 1, after: 10, brandIds: null, visitTypes: ['MV'], take: 500, plus: false }, writer(false))],
  ])('reads the rows of %s in page order without sorting the documents', async (_, read) => {
    statements.length = 0;
    await read(new VisitsRepository(db, {} as WebhookOutbox));
    expect(statements).toHaveLength(1);
    expect(statements[0]).not.toMatch(/group_concat/);
    const steps = await plan(statements[0]);
    expect(steps[0]).toMatch(/^CO-ROUTINE page/);
    expect(steps.slice(2)).toEqual(['SCAN page', expect.stringMatching(/^SEARCH d USING INDEX sqlite_autoindex_visit_documents_1 \(visit_id=\?\)$/)]);
    expect(steps.filter((step) => step.includes('TEMP B-TREE'))).toEqual([]);
  });

  it('reads a page of the change feed in write order without sorting the documents', async () => {
    statements.length = 0;
    const repo = new VisitsRepository(db, {} as WebhookOutbox);
    await repo.changes({ clientId: 1, after: 10, brandIds: [3], visitTypes: null, take: 200, plus: false }, writer(false));
    expect(statements).toHaveLength(1);
    const steps = await plan(statements[0]);
    expect(steps[0]).toMatch(/^CO-ROUTINE page/);
    expect(steps[1]).toMatch(/SEARCH visits USING (COVERING )?INDEX ix_visits_client_change/);
    expect(steps.slice(2)).toEqual(['SCAN page', expect.stringMatching(/^SEARCH d USING INDEX sqlite_autoindex_visit_documents_1 \(visit_id=\?\)$/)]);
    expect(steps.filter((step) => step.includes('TEMP B-TREE'))).toEqual([]);
  });
});
