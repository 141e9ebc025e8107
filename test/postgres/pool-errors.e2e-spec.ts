import type pg from 'pg';
import { DataSource } from 'typeorm';
import { guardPoolClients } from '../../src/database/pool-errors.js';

/** A connection the server ends while it is checked out, before TypeORM listens on it (see guardPoolClients). */
describe('PostgreSQL connections ended by the server', () => {
  const open = () => new DataSource({ type: 'postgres', url: process.env.DATABASE_URL, poolSize: 2 }).initialize();
  const poolOf = (db: DataSource) => (db.driver as unknown as { master: pg.Pool }).master;

  it('end the request with an error, not the process: every client of the pool listens for its errors', async () => {
    const db = await open();
    guardPoolClients(db);
    try {
      // Both the client made at start and one made afterwards, each checked out (the pool no longer listens).
      const clients = [await poolOf(db).connect(), await poolOf(db).connect()];
      for (const client of clients) {
        expect(() => client.emit('error', new Error('terminating connection due to administrator command'))).not.toThrow();
        client.release(true);
      }
      expect(await db.query('SELECT 1 AS one')).toEqual([{ one: 1 }]);
    } finally {
      await db.destroy();
    }
  });

  it('without the guard, such an error is unhandled (what ended the process)', async () => {
    const db = await open();
    try {
      const client = await poolOf(db).connect();
      expect(() => client.emit('error', new Error('terminating connection due to administrator command'))).toThrow('administrator command');
      client.release(true);
    } finally {
      await db.destroy();
    }
  });
});
