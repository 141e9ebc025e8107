import { Injectable } from '@nestjs/common';
import { LRUCache } from 'lru-cache';
import { NameFragments, StaleNames, visitsPageJson, type DocumentRow } from './visit-json.js';
import { VisitsRepository } from './visits.repository.js';

/** Clients whose names are kept at once: a few KB each (a fragment per branch). */
const CLIENTS_KEPT = 2_000;

/**
 * The names visits are written with (client, brand, branch), per client and data version:
 * every rename moves the client's data version, so names read for a version stay right for it.
 * A page is rendered from the stored documents and these.
 */
@Injectable()
export class VisitNames {
  private readonly names = new LRUCache<string, NameFragments>({ max: CLIENTS_KEPT });

  constructor(private readonly repo: VisitsRepository) {}

  /**
   * The page body of `rows`. Names are read once per data version; if a visit's branch is not
   * among them (written after they were read, within the same version as far as this replica
   * could tell), they are read again once.
   */
  async render(clientId: number, version: number, rows: DocumentRow[], plus: boolean, after?: string): Promise<Buffer> {
    const key = `${clientId}:${version}`;
    const known = this.names.get(key);
    if (known) {
      try {
        return visitsPageJson(rows, known, plus, after);
      } catch (error) {
        if (!(error instanceof StaleNames)) throw error;
      }
    }
    const fresh = new NameFragments((await this.repo.names(clientId)) ?? { clientId, clientName: '', brands: new Map(), branches: new Map() });
    this.names.set(key, fresh);
    return visitsPageJson(rows, fresh, plus, after);
  }
}
