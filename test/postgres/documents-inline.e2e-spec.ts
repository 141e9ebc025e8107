import type { DataSource } from 'typeorm';
import { openDataSource } from '../../src/database/migration-tools.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * On PostgreSQL a visit document (about 4 KB) is kept uncompressed in the table's own row, so
 * reading a page decompresses nothing; documents stored compressed before are rewritten by the
 * migration, byte for byte the same.
 */
describe('visit documents kept uncompressed on PostgreSQL', () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  /** More documents than one batch of the migration (2000). */
  const count = 2500;

  interface Stored {
    visit_id: string;
    stored: number;
    bytes: number;
    digest: string;
  }
  const stored = (): Promise<Stored[]> =>
    db.query<Stored[]>(
      'SELECT visit_id::text AS visit_id, pg_column_size(standard) AS stored, octet_length(standard) AS bytes, md5(standard) AS digest FROM visit_documents ORDER BY visit_id',
    );
  const compressed = (rows: Stored[]): string[] => rows.filter((r) => r.stored < r.bytes).map((r) => r.visit_id);
  const options = async (): Promise<string[] | null> =>
    (await db.query<{ options: string[] | null }[]>("SELECT reloptions AS options FROM pg_class WHERE oid = 'visit_documents'::regclass"))[0].options;
  /** A document of about `size` bytes that compresses well, different per visit, with text JSON escapes and characters beyond ASCII. */
  const documentSql = (size: number): string =>
    `convert_to(',"sections":[' || repeat('{"question":"Caf\u00e9 \\"' || v.id || '\\" \u{1F37D}","answer":"yes"},', ${Math.ceil(size / 48)}) || '{}]', 'UTF8')`;

  /** Undoes the migrations from the last one down to DocumentsInline, that one included. */
  async function undoThroughDocumentsInline(): Promise<void> {
    const at = db.migrations.findIndex((m) => m.name?.startsWith('DocumentsInline'));
    expect(at).toBeGreaterThan(0);
    for (let i = db.migrations.length - 1; i >= at; i--) await db.undoLastMigration({ transaction: 'each' });
  }

  beforeAll(async () => {
    db = await openDataSource(config);
    await db.runMigrations({ transaction: 'each' });
    await undoThroughDocumentsInline();
    expect(await options()).toBeNull();
    // The migrations after DocumentsInline stay out: the documents repair would render these
    // made-up documents again from their visits, which is its job, not this test's.
    db.migrations.splice(db.migrations.findIndex((m) => m.name?.startsWith('DocumentsInline')) + 1);
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One')`);
    await db.query(`INSERT INTO branches (id, client_id, name) VALUES ('B1', 1, 'b1')`);
    await db.query(
      `INSERT INTO visits (id, client_id, branch_id, visit_type, questionnaire_type, visit_score, visit_date, visit_date_time, modification_date, sections)
       SELECT g, 1, 'B1', 'MV', 'Dinner', 80, '2026-01-01', '2026-01-01T09:00:00', '2026-01-01T09:00:00', '[]' FROM generate_series(1, ${count + 2}) g`,
    );
    // Visit count + 1 has a document too large for a row: it stays compressed and out of line.
    await db.query(
      `INSERT INTO visit_documents (visit_id, branch_id, standard, plus)
       SELECT v.id, 'B1', CASE WHEN v.id = ${count + 1} THEN ${documentSql(20_000)} ELSE ${documentSql(4_000)} END, convert_to(',"guestId":null', 'UTF8')
       FROM visits v WHERE v.id <= ${count + 1}`,
    );
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('rewrites documents stored compressed, uncompressed and with the same bytes', async () => {
    const before = await stored();
    expect(before).toHaveLength(count + 1);
    expect(before[0].bytes).toBeGreaterThan(3_500);
    expect(before[0].bytes).toBeLessThan(8_000);
    // PostgreSQL's default: every document over about 2 KB compressed.
    expect(compressed(before)).toHaveLength(count + 1);

    await db.runMigrations({ transaction: 'each' });

    expect(await options()).toEqual(['toast_tuple_target=8160']);
    const after = await stored();
    expect(after.map((r) => [r.visit_id, r.bytes, r.digest])).toEqual(before.map((r) => [r.visit_id, r.bytes, r.digest]));
    expect(compressed(after)).toEqual([String(count + 1)]);
  });

  it('stores a new document uncompressed, and the migration undone sets the default back', async () => {
    await db.query(
      `INSERT INTO visit_documents (visit_id, branch_id, standard, plus)
       SELECT v.id, 'B1', ${documentSql(4_000)}, convert_to(',"guestId":null', 'UTF8') FROM visits v WHERE v.id = ${count + 2}`,
    );
    const [row] = (await stored()).filter((r) => r.visit_id === String(count + 2));
    expect(row.bytes).toBeGreaterThan(3_500);
    expect(row.stored).toBeGreaterThanOrEqual(row.bytes);

    await undoThroughDocumentsInline();
    expect(await options()).toBeNull();
  });
});
