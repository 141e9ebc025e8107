import type { DataSource } from 'typeorm';
import { migrationsAhead, pendingSchemaChanges } from '../src/database/migration-tools.js';
import { migratedUpTo } from './helpers/migrated.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

/** The earlier form of AddVisitDepartures, as a database that ran it before it was replaced holds it. */
const EARLIER = onPostgres()
  ? {
      name: 'AddVisitDepartures1795549819651',
      sql: [
        `CREATE TABLE "visit_departures" ("client_id" integer NOT NULL, "change_seq" bigint NOT NULL, "visit_id" bigint NOT NULL, "brand_id" integer, "visit_type" character varying(2) NOT NULL, CONSTRAINT "PK_573e7e13215f8949967a24fce69" PRIMARY KEY ("client_id", "change_seq"))`,
        `ALTER TABLE "visit_departures" ADD CONSTRAINT "fk_visit_departures_client" FOREIGN KEY ("client_id") REFERENCES "clients"("id") ON DELETE CASCADE ON UPDATE NO ACTION`,
      ],
    }
  : {
      name: 'AddVisitDepartures1795549817519',
      sql: [
        `CREATE TABLE "visit_departures" ("client_id" integer NOT NULL, "change_seq" bigint NOT NULL, "visit_id" bigint NOT NULL, "brand_id" integer, "visit_type" varchar(2) NOT NULL, CONSTRAINT "fk_visit_departures_client" FOREIGN KEY ("client_id") REFERENCES "clients" ("id") ON DELETE CASCADE ON UPDATE NO ACTION, PRIMARY KEY ("client_id", "change_seq"))`,
      ],
    };

/**
 * A database migrated by a release that ran AddVisitDepartures in its earlier form (before it
 * was renamed and given where each visit went): the migrations run on it, keep its departures
 * and leave the schema the entities describe.
 */
describe(`AddVisitDepartures on a database that ran its earlier form (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  const p = (n: number): string => (onPostgres() ? `$${n}` : '?');

  beforeAll(async () => {
    db = await migratedUpTo(config, 'AddVisitDepartures');
    for (const sql of EARLIER.sql) await db.query(sql);
    await db.query(`INSERT INTO migrations (timestamp, name) VALUES (${p(1)}, ${p(2)})`, [Number(EARLIER.name.slice(-13)), EARLIER.name]);
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it('brings the earlier table to the new form, keeping its rows, where each visit went taken from where it is now', async () => {
    await db.query(`INSERT INTO clients (id, name) VALUES (1, 'One')`);
    await db.query(`INSERT INTO brands (id, client_id, name) VALUES (5, 1, 'Five')`);
    await db.query(`INSERT INTO branches (id, client_id, brand_id, name) VALUES ('B1', 1, 5, 'b1')`);
    await db.query(
      `INSERT INTO visits (id, client_id, brand_id, branch_id, visit_type, questionnaire_type, visit_score, visit_date, visit_date_time, modification_date, sections, change_seq)
       VALUES (7, 1, 5, 'B1', 'MV', 'Q', 80, '2026-01-01', '2026-01-01T09:00:00', '2026-01-02T09:00:00', '[]', 9)`,
    );
    // A visit that moved from no brand and type OF; and a row of a visit no longer stored.
    await db.query(`INSERT INTO visit_departures (client_id, change_seq, visit_id, brand_id, visit_type) VALUES (1, 9, 7, NULL, 'OF'), (1, 4, 99, 5, 'TA')`);

    await db.runMigrations({ transaction: 'each' });

    const names = (await db.query<{ name: string }[]>('SELECT name FROM migrations ORDER BY id')).map((m) => m.name);
    // The earlier name stays: replicas of the release that ran it find their migrations applied.
    expect(names).toContain(EARLIER.name);
    expect(await migrationsAhead(db)).toEqual([]);
    expect(names.filter((n) => n.startsWith('AddVisitDepartures'))).toEqual([EARLIER.name, db.migrations.find((m) => m.name?.startsWith('AddVisitDepartures'))?.name]);
    const rows = await db.query<Record<string, unknown>[]>(
      'SELECT client_id, change_seq, visit_id, brand_id, visit_type, new_brand_id, new_visit_type FROM visit_departures ORDER BY change_seq',
    );
    expect(rows.map((r) => Object.fromEntries(Object.entries(r).map(([k, v]) => [k, typeof v === 'string' && /^\d+$/.test(v) ? Number(v) : v])))).toEqual([
      { client_id: 1, change_seq: 9, visit_id: 7, brand_id: null, visit_type: 'OF', new_brand_id: 5, new_visit_type: 'MV' },
    ]);
    expect(await pendingSchemaChanges(db)).toEqual({ up: [], down: [] });
    // A second run finds nothing to do.
    expect(await db.runMigrations({ transaction: 'each' })).toEqual([]);
  });
});
