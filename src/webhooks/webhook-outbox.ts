import { Injectable } from '@nestjs/common';
import type { EntityManager } from 'typeorm';
import { WebhooksRepository, type ChangedVisit } from './webhooks.repository.js';

export type { ChangedVisit };

/**
 * What other features write to the webhooks outbox. The visits import calls it inside its
 * own transaction, so the events commit, or roll back, with the visits they announce; the
 * repository behind it stays the webhooks feature's own.
 */
@Injectable()
export class WebhookOutbox {
  constructor(private readonly repo: WebhooksRepository) {}

  /** Records the visits.changed events for `visits`, written in `tx` at `at`. */
  recordVisitChanges(tx: EntityManager, visits: readonly ChangedVisit[], at: Date): Promise<void> {
    return this.repo.recordVisitChanges(tx, visits, at);
  }
}
