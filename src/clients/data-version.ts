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
  for (const id of ids) {
    await tx
      .createQueryBuilder()
      .update(Client)
      .set({ dataVersion: () => 'data_version + 1' })
      .where({ id })
      .execute();
  }
}
