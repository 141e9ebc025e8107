import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DataSource } from 'typeorm';
import { openDataSource } from '../src/database/migration-tools.js';
import { repairVisitDocuments } from '../src/database/migrations/visit-documents-backfill.js';
import { renderStoredVisit, type VisitColumns } from '../src/visits/visit-json.js';
import { cliJson } from './helpers/cli.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

const files = mkdtempSync(join(tmpdir(), 'repair-'));

/**
 * Releases that copied an upsert's rows back by position wrote documents under the wrong visits;
 * the repair migration writes them again from the visits, and only those: documents written
 * by this release are left alone.
 */
describe(`the visit documents repair (${process.env.TEST_DATABASE})`, () => {
  const { config, env, drop } = isolatedConfig();
  let db: DataSource;

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme Dining'], env);
    await cliJson(['brands', 'add', '--client', '1001', '--id', '5', '--name', 'Acme Grill'], env);
    const branches = join(files, 'branches.csv');
    writeFileSync(branches, 'id,name,branchCode,brandId\nBR-1,Leeds,LDS-01,5\nBR-2,York,YRK,5\n');
    await cliJson(['branches', 'import', '--client', '1001', branches], env);
    // Visits with values a renderer could write in two ways: escapes, astral text, floats, nulls, opt-ins.
    const visits = Array.from({ length: 40 }, (_, i) => ({
      visitId: 9000 + i,
      clientId: 1001,
      branchId: i % 2 ? 'BR-1' : 'BR-2',
      visitType: i % 3 ? 'MV' : 'OF',
      questionnaireType: `Dinner "${i}" \\ \u{1F37D}`,
      visitScore: i % 4 ? 0.1 + 0.2 * i : 87.5,
      recommendScore: i % 5 ? i % 11 : null,
      recommendComment: i % 6 ? `Caf\u00e9 \u2028 ${i}` : null,
      visitDateTime: `2026-11-${String(1 + (i % 20)).padStart(2, '0')}T19:30:00`,
      modificationDate: '2026-11-21T08:00:00',
      visitSource: i % 7 ? 'Email' : null,
      sections: [{ name: `S ${i}`, score: i, questions: [{ subject: 'Q?', score: 1.5, analysisTag: 'T', category: 'C', dish: null, answer: 'Yes' }] }],
      guestId: i % 3 ? null : `G-${i}`,
      optIns: i % 3 ? null : { contactByEmail: i % 2 === 0, joinMarketing: null },
    }));
    const file = join(files, 'visits.ndjson');
    writeFileSync(file, visits.map((v) => JSON.stringify(v)).join('\n'));
    expect(await cliJson(['visits', 'import', file], env)).toMatchObject({ imported: 40, rejected: [] });
    db = await openDataSource(config);
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  const state = async () => {
    const [client] = await db.query<{ seq: number | string; version: number | string }[]>('SELECT change_seq AS seq, data_version AS version FROM clients WHERE id = 1001');
    const seqs = await db.query<{ id: number | string; seq: number | string }[]>('SELECT id, change_seq AS seq FROM visits ORDER BY id');
    return { seq: Number(client.seq), version: Number(client.version), visits: new Map(seqs.map((r) => [Number(r.id), Number(r.seq)])) };
  };

  /** The repair as the migration runs it: the documents it wrote. */
  const repair = async (): Promise<number> => {
    const runner = db.createQueryRunner();
    try {
      return await repairVisitDocuments(runner, onPostgres());
    } finally {
      await runner.release();
    }
  };

  it('leaves the documents this release wrote as they are: nothing differs, nothing moves', async () => {
    const before = await state();
    expect(await repair()).toBe(0);
    expect(await state()).toEqual(before);
  });

  it('writes again the documents stored under the wrong visits, and puts those visits on the feed again', async () => {
    // What the earlier releases did: two visits' documents swapped, one of another branch.
    const docs = await db.query<{ visit_id: number | string; branch_id: string; standard: Buffer; plus: Buffer }[]>(
      'SELECT visit_id, branch_id, standard, plus FROM visit_documents WHERE visit_id IN (9003, 9004, 9010) ORDER BY visit_id',
    );
    const p = (n: number): string => (onPostgres() ? `$${n}` : '?');
    const put = (id: number, from: (typeof docs)[number]) =>
      db.query(`UPDATE visit_documents SET branch_id = ${p(1)}, standard = ${p(2)}, plus = ${p(3)} WHERE visit_id = ${p(4)}`, [from.branch_id, from.standard, from.plus, id]);
    await put(9003, docs[1]);
    await put(9004, docs[0]);
    await db.query(`UPDATE visit_documents SET plus = ${p(1)} WHERE visit_id = 9010`, [Buffer.from(',"guestId":"someone else"')]);
    const before = await state();

    const startedAt = Date.now();
    expect(await repair()).toBe(3);

    const rows = await db.query<(VisitColumns & { id: number | string; branch_id: string; doc_branch: string; standard: Buffer; plus: Buffer })[]>(
      `SELECT v.*, d.branch_id AS doc_branch, d.standard, d.plus FROM visits v JOIN visit_documents d ON d.visit_id = v.id ORDER BY v.id`,
    );
    expect(rows).toHaveLength(40);
    for (const row of rows) {
      const rendered = renderStoredVisit(row);
      expect([Number(row.id), row.doc_branch, row.standard.toString('utf8'), row.plus.toString('utf8')]).toEqual([
        Number(row.id),
        row.branch_id,
        rendered.standard.toString('utf8'),
        rendered.plus.toString('utf8'),
      ]);
    }
    const after = await state();
    // On the feed again after everything before them, numbered from the clock at least (as every write is).
    expect(after.version).toBe(before.version + 1);
    // (SQLite's clock reads the millisecond within some 40 µs: one millisecond of slack.)
    expect(after.seq).toBeGreaterThanOrEqual(Math.max(before.seq + 3, (startedAt - 1) * 1000));
    expect([9003, 9004, 9010].map((id) => after.visits.get(id))).toEqual([after.seq - 2, after.seq - 1, after.seq]);
    for (const [id, seq] of before.visits) if (![9003, 9004, 9010].includes(id)) expect([id, after.visits.get(id)]).toEqual([id, seq]);
  });
});
