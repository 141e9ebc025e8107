import type { DataSource } from 'typeorm';
import { pendingSchemaChanges } from '../src/database/migration-tools.js';
import { migratedUpTo } from './helpers/migrated.js';
import { isolatedConfig, onPostgres } from './helpers/test-config.js';

/**
 * Signing keys retired by a release from before a retirement erased the key's private part:
 * the migrations erase it, so that the table and backups taken from then on hold none of a key
 * that signed, and leave active keys as they are.
 */
describe(`EraseRetiredSigningKeys (${process.env.TEST_DATABASE})`, () => {
  const { config, drop } = isolatedConfig();
  let db: DataSource;
  const p = (n: number): string => (onPostgres() ? `$${n}` : '?');

  beforeAll(async () => {
    db = await migratedUpTo(config, 'EraseRetiredSigningKeys');
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  it("erases the private part of the keys retired before, and of no active key; their ids, public keys and dates stay", async () => {
    const jwk = '{"kty":"EC","crv":"P-256","x":"x","y":"y"}';
    const insert = `INSERT INTO signing_keys (kid, alg, private_key, public_jwk, created_at, retired_at) VALUES (${[1, 2, 3, 4, 5, 6].map(p).join(', ')})`;
    const created = new Date('2026-12-01T10:00:00.000Z');
    const retired = new Date('2026-12-01T12:00:00.000Z');
    const time = (at: Date): Date | string => (onPostgres() ? at : at.toISOString().replace('T', ' ').replace('Z', ''));
    await db.query(insert, ['retired-sealed', 'ES256', 'v1.aaa.bbb.ccc', jwk, time(created), time(retired)]);
    await db.query(insert, ['retired-in-clear', 'ES256', '-----BEGIN PRIVATE KEY-----\nMIG\n-----END PRIVATE KEY-----\n', jwk, time(created), time(retired)]);
    await db.query(insert, ['active', 'ES256', 'v1.ddd.eee.fff', jwk, time(created), null]);

    await db.runMigrations({ transaction: 'each' });

    const rows = await db.query<{ kid: string; private_key: string; public_jwk: string; retired: number | boolean }[]>(
      'SELECT kid, private_key, public_jwk, CASE WHEN retired_at IS NULL THEN 0 ELSE 1 END AS retired FROM signing_keys ORDER BY kid',
    );
    expect(rows.map((r) => ({ ...r, retired: Number(r.retired) }))).toEqual([
      { kid: 'active', private_key: 'v1.ddd.eee.fff', public_jwk: jwk, retired: 0 },
      { kid: 'retired-in-clear', private_key: '', public_jwk: jwk, retired: 1 },
      { kid: 'retired-sealed', private_key: '', public_jwk: jwk, retired: 1 },
    ]);
    expect(await pendingSchemaChanges(db)).toEqual({ up: [], down: [] });
    expect(await db.runMigrations({ transaction: 'each' })).toEqual([]);
  });
});
