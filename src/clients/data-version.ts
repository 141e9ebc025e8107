import type { EntityManager } from 'typeorm';
import { movesDataVersion } from '../database/transaction.js';
import { Client } from './entities/client.entity.js';

/**
 * Moves the data version of clients whose visit responses change (visits, branch names or
 * codes, brand or client names), inside the caller's transaction. Exported by the clients
 * feature for the repositories of other features that write such data (branches), which
 * may not import the clients repository itself. It locks the clients' rows until the
 * transaction ends: a writer calls it before it writes anything else, as the visits import
 * takes its clients' rows first, so that writers of one client queue at that row.
 */
export async function bumpDataVersion(tx: EntityManager, clientIds: number[]): Promise<void> {
  const ids = [...new Set(clientIds)].sort((a, b) => a - b);
  if (ids.length === 0) return;
  movesDataVersion(tx);
  // One client at a time, in id order: the order every writer locks clients' rows in (see
  // VisitsRepository.upsertBatch), so that two writers never wait for each other in a circle.
  // The write sequence moves too (see sequenceAfter): it is the version readers go by.
  const clock = String(Date.now() * 1000);
  const postgres = tx.connection.options.type === 'postgres';
  for (const id of ids) {
    await tx
      .createQueryBuilder()
      .update(Client)
      .set({ dataVersion: () => 'data_version + 1', changeSeq: () => sequenceAfter(postgres, 1) })
      .where({ id })
      .setParameters({ clock })
      .execute();
  }
}

/**
 * Locks the clients' rows until the transaction ends, in id order, as bumpDataVersion does,
 * without moving their versions: for a writer that finds out under the lock whether it has
 * anything to write (a re-import of what is stored writes nothing, and moves no version).
 */
export async function lockClients(tx: EntityManager, clientIds: number[]): Promise<void> {
  const p = tx.connection.options.type === 'postgres' ? '$1' : '?';
  // data_version set to itself: a key column in the SET list would have SQLite check every row that refers to the client.
  for (const id of [...new Set(clientIds)].sort((a, b) => a - b)) await tx.query(`UPDATE clients SET data_version = data_version WHERE id = ${p}`, [id]);
}

/**
 * The SQL of a client's write sequence moved on by `count` numbers (a query parameter `:clock`,
 * or `$1`/`?` in raw SQL as `placeholder` says, holds the clock in microseconds since 1970, as
 * text). The sequence never falls behind the clock: a database restored from an earlier backup
 * numbers its next writes, and versions, after every one it handed out before the restore, so
 * a feed token a partner holds from then still sees them (numbered on from the backup's, the
 * feed would skip them) and no version, page or ETag of before the restore is used again for
 * other data. It is what readers take for the client's data version (ClientDataVersions): it
 * moves with every change, data_version with it.
 */
export function sequenceAfter(postgres: boolean, count: number | string, placeholder = ':clock'): string {
  return postgres
    ? `GREATEST(change_seq, CAST(${placeholder} AS bigint)) + ${count}`
    : `MAX(change_seq, CAST(${placeholder} AS INTEGER)) + ${count}`;
}
