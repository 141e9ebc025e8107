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
 *
 * Whenever `data_version` moves, a trigger of the database (migration
 * SequenceFollowsDataVersion) moves the client's write sequence (`change_seq`) past the clock
 * (microseconds since 1970) and past its number before, whatever the writer set it to; readers
 * take the sequence for the data version (ClientDataVersions). A database restored from an
 * earlier backup thus numbers its next writes, and versions, after every one it handed out
 * before the restore: a feed token a partner holds from then still sees them, and no version,
 * page or ETag of before the restore is used again for other data.
 */
export async function bumpDataVersion(tx: EntityManager, clientIds: number[]): Promise<void> {
  const ids = [...new Set(clientIds)].sort((a, b) => a - b);
  if (ids.length === 0) return;
  movesDataVersion(tx);
  // One client at a time, in id order: the order every writer locks clients' rows in (see
  // VisitsRepository.upsertBatch), so that two writers never wait for each other in a circle.
  // The database moves the write sequence with it (see above).
  for (const id of ids) {
    await tx
      .createQueryBuilder()
      .update(Client)
      .set({ dataVersion: () => 'data_version + 1' })
      .where({ id })
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
