import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { loadConfig, type AppConfig } from '../../src/config/app-config.js';

export const onPostgres = (): boolean => process.env.TEST_DATABASE === 'postgres';

/**
 * A configuration for one test file's own database: a fresh SQLite folder, or a fresh
 * PostgreSQL schema, so test runs and files never collide. `drop()` removes it.
 */
export function isolatedConfig(env: Record<string, string> = {}): { config: AppConfig; env: Record<string, string>; drop: () => Promise<void> } {
  const dataDir = mkdtempSync(join(tmpdir(), 'results-test-'));
  const schema = `t_${Date.now().toString(36)}_${randomBytes(4).toString('hex')}`;
  const full: Record<string, string> = {
    DATA_DIR: dataDir,
    SEED_DEMO: 'false',
    LOG_LEVEL: 'silent',
    // Tests make many requests a minute; the rate-limit tests set their own limits.
    RATE_LIMIT_PER_MINUTE: '1000000',
    TOKEN_RATE_LIMIT_PER_MINUTE: '1000000',
    ...(onPostgres() ? { DATABASE_URL: process.env.DATABASE_URL!, DATABASE_SCHEMA: schema } : {}),
    ...env,
  };
  const config = loadConfig(full);
  return {
    config,
    env: full,
    drop: async () => {
      rmSync(dataDir, { recursive: true, force: true });
      if (config.DATABASE_URL) {
        const db = new DataSource({ type: 'postgres', url: config.DATABASE_URL, poolSize: 1 });
        await db.initialize();
        const runner = db.createQueryRunner();
        // The pool's end does not wait for its connection to close; the test file's end should.
        const connection = (await runner.connect()) as { once(event: 'end', listener: () => void): void };
        const closed = new Promise<void>((resolve) => connection.once('end', resolve));
        try {
          await runner.query(`DROP SCHEMA IF EXISTS "${config.DATABASE_SCHEMA}" CASCADE`);
        } finally {
          await runner.release();
          await db.destroy();
        }
        await closed;
      }
    },
  };
}
