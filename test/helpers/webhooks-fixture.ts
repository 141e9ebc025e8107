import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ClientsService } from '../../src/clients/clients.service.js';
import { addDays, localDate } from '../../src/common/clock.js';
import { WebhooksRepository } from '../../src/webhooks/webhooks.repository.js';
import { seedClients } from './auth.js';
import { importBranches } from './visits-fixture.js';
import type { TestApp } from './test-app.js';

/** Settings that keep webhook tests short: quick polls, windows and retries, http to loopback. */
export const QUICK_WEBHOOKS = {
  WEBHOOKS_ALLOW_HTTP_LOOPBACK: 'true',
  WEBHOOKS_POLL_MS: '50',
  WEBHOOKS_COALESCE_MS: '200',
  WEBHOOKS_BACKOFF_BASE_MS: '100',
  WEBHOOKS_TIMEOUT_MS: '2000',
};

const dir = mkdtempSync(join(tmpdir(), 'webhooks-fixture-'));

/** Branches of the webhook tests: B-1 (client 1001, brand 5), B-2 (1001, brand 6), B-9 (1002, brand 21). */
export const BRANCHES = {
  'B-1': { clientId: 1001, brandId: 5 },
  'B-2': { clientId: 1001, brandId: 6 },
  'B-9': { clientId: 1002, brandId: 21 },
} as const;

/** Clients 1001 (brands 5, 6) and 1002 (brand 21) with the branches above. */
export async function seedWebhookClients(t: TestApp): Promise<void> {
  await seedClients(t);
  await t.app.get(ClientsService).addBrand(1001, 6, 'Acme Pizzeria');
  for (const clientId of [1001, 1002]) {
    const rows = Object.entries(BRANCHES)
      .filter(([, b]) => b.clientId === clientId)
      .map(([id, b]) => ({ id, name: id, branchCode: null, brandId: b.brandId }));
    const file = join(dir, `branches-${clientId}-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify(rows));
    await importBranches(t, clientId, file);
  }
}

/** A visit record of a branch above; `score` tells re-imports apart. */
export function visitRecord(visitId: number, branchId: keyof typeof BRANCHES, visitType = 'MV', score = 80): Record<string, unknown> {
  const day = addDays(localDate('Europe/London'), -2);
  return {
    visitId,
    ...BRANCHES[branchId],
    branchId,
    visitType,
    questionnaireType: 'Mystery Visit',
    visitScore: score,
    recommendScore: 7,
    recommendComment: 'Fine.',
    visitDateTime: `${day}T12:00:00`,
    modificationDate: `${day}T20:00:00`,
    visitSource: 'Web',
    sections: [],
    guestId: null,
    optIns: null,
    completedAt: null,
  };
}

/** Events waiting in the outbox, over every endpoint. */
export async function pendingEvents(t: TestApp): Promise<number> {
  return (await t.app.get(WebhooksRepository).outboxStats()).depth;
}
