import { In, type EntityManager } from 'typeorm';
import { movesDataVersion } from '../database/transaction.js';
import { Client } from './entities/client.entity.js';

/**
 * Moves the data version of clients whose visit responses change (visits, branch names or
 * codes, brand or client names), inside the caller's transaction. Exported by the clients
 * feature for the repositories of other features that write such data (branches), which
 * may not import the clients repository itself.
 */
export async function bumpDataVersion(tx: EntityManager, clientIds: number[]): Promise<void> {
  const ids = [...new Set(clientIds)];
  if (ids.length === 0) return;
  movesDataVersion(tx);
  await tx
    .createQueryBuilder()
    .update(Client)
    .set({ dataVersion: () => 'data_version + 1' })
    .where({ id: In(ids) })
    .execute();
}
