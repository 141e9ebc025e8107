import type { DataSource } from 'typeorm';
import { openDataSource } from '../src/database/migration-tools.js';
import { Visit } from '../src/visits/entities/visit.entity.js';
import { renderVisitDocument } from '../src/visits/visit-json.js';
import { migratedUpTo } from './helpers/migrated.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

/**
 * A database that held visits before their documents were stored: the migration renders a
 * document for every visit, with the function that renders them when visits are written, so
 * pages read from them are the pages rendered before, byte for byte.
 */
describe(`the visit documents migration on existing data (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;

  beforeAll(async () => {
    db = await migratedUpTo(config, 'AddVisitDocuments');
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('renders the document of every stored visit as a write would', async () => {
    const p = (n: number): string => (onPostgres() ? `$${n}` : '?');
    const yes = onPostgres() ? true : 1;
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One')`);
    await db.query(`INSERT INTO branches (id, client_id, name) VALUES ('B1', 1, 'b1'), ('B2', 1, 'b2')`);
    // More visits than one batch of the migration, with empty, null, astral and escaped values.
    const count = 1234;
    for (let id = 1; id <= count; id++) {
      await db.query(
        `INSERT INTO visits (id, client_id, branch_id, visit_type, questionnaire_type, visit_score, recommend_score, recommend_comment,
           visit_date, visit_date_time, modification_date, visit_source, sections, guest_id, opt_in_contact_by_email, opt_in_join_marketing)
         VALUES (${[...Array(16).keys()].map((i) => p(i + 1)).join(', ')})`,
        [
          id * 7,
          1,
          id % 2 ? 'B1' : 'B2',
          id % 3 ? 'MV' : 'OF',
          id % 5 ? 'Dinner "A"' : '',
          id % 4 ? 0.1 + 0.2 : 87.5,
          id % 6 ? null : 10,
          id % 7 ? `Caf\u00e9 \u{1F37D} \\ ${id}` : null,
          '2026-01-01',
          '2026-01-01T09:00:00',
          '2026-01-02T09:00:00',
          id % 8 ? 'Email' : null,
          `[{"sectionName":"S ${id}","questions":[]}]`,
          id % 9 ? null : `G-${id}`,
          id % 2 ? null : yes,
          id % 3 ? (onPostgres() ? false : 0) : null,
        ],
      );
    }
    await db.runMigrations({ transaction: 'each' });

    const docs = await db.query<{ visit_id: string | number; branch_id: string; standard: Buffer; plus: Buffer }[]>(
      'SELECT visit_id, branch_id, standard, plus FROM visit_documents ORDER BY visit_id',
    );
    const visits = await db.getRepository(Visit).find({ order: { id: 'ASC' } });
    expect(docs).toHaveLength(count);
    expect(visits).toHaveLength(count);
    visits.forEach((visit, i) => {
      const doc = docs[i];
      expect([Number(doc.visit_id), doc.branch_id]).toEqual([visit.id, visit.branchId]);
      const rendered = renderVisitDocument(visit);
      expect(doc.standard.toString('utf8')).toBe(rendered.standard.toString('utf8'));
      expect(doc.plus.toString('utf8')).toBe(rendered.plus.toString('utf8'));
    });
    // A few exactly, so that a renderer broken in both places is caught too.
    expect(docs[6].standard.toString('utf8')).toBe(
      ',"visitType":"MV","questionnaireType":"Dinner \\"A\\"","visitScore":0.30000000000000004,"recommendScore":null,' +
        '"recommendComment":null,"visitDateTime":"2026-01-01T09:00:00","modificationDate":"2026-01-02T09:00:00",' +
        '"visitSource":"Email","sections":[{"sectionName":"S 7","questions":[]}]',
    );
    expect(docs[8].plus.toString('utf8')).toBe(',"guestId":"G-9","optIns":{"contactByEmail":null,"joinMarketing":null}');
    expect(docs[5].plus.toString('utf8')).toBe(',"guestId":null,"optIns":{"contactByEmail":true,"joinMarketing":null}');
  });
});

describe(`a new database (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  afterAll(drop);

  it('stores documents as bytes, on SQLite in pages that hold one whole (16 KB)', async () => {
    const db = await openDataSource(config);
    try {
      await db.runMigrations({ transaction: 'each' });
      if (onPostgres()) {
        const [column] = await db.query<{ t: string }[]>(
          "SELECT data_type AS t FROM information_schema.columns WHERE table_schema = current_schema() AND table_name = 'visit_documents' AND column_name = 'standard'",
        );
        expect(column?.t).toBe('bytea');
      } else {
        expect((await db.query<{ page_size: number }[]>('PRAGMA page_size'))[0]?.page_size).toBe(16384);
        const columns = await db.query<{ name: string; type: string }[]>('PRAGMA table_info(visit_documents)');
        expect(columns.find((c) => c.name === 'standard')?.type.toLowerCase()).toBe('blob');
      }
    } finally {
      await db.destroy();
    }
  });
});
