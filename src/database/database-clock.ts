import { DataSource, type EntityManager } from 'typeorm';

/**
 * Now by the database's clock on PostgreSQL, which every replica and operator's command shares
 * (`clock_timestamp()`: the moment of the call, not of the transaction's start); by the
 * process's on SQLite, whose writers are all on one host. What is compared across processes
 * (a feed's dates, webhook leases, signing key turns) is written and judged by it, so a host
 * whose clock is off neither dates its writes before ones made earlier nor cuts a lease short.
 */
export async function databaseNow(db: DataSource | EntityManager): Promise<Date> {
  const source = db instanceof DataSource ? db : db.connection;
  if (source.options.type !== 'postgres') return new Date();
  const rows = await db.query<{ now: Date }[]>('SELECT clock_timestamp() AS now');
  return new Date(rows[0].now);
}
