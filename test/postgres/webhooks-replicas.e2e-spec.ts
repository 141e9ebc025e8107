import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook } from '../../examples/verify-webhook.js';
import { cliJson } from '../helpers/cli.js';
import { eventually } from '../helpers/eventually.js';
import { startService } from '../helpers/service-process.js';
import { isolatedConfig } from '../helpers/test-config.js';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.js';
import { QUICK_WEBHOOKS, visitRecord } from '../helpers/webhooks-fixture.js';

const files = mkdtempSync(join(tmpdir(), 'webhooks-replicas-'));
/** A file of records: NDJSON for visits, a JSON array for branches. */
function file(name: string, rows: unknown[]): string {
  const path = join(files, name);
  writeFileSync(path, name.endsWith('.ndjson') ? rows.map((r) => JSON.stringify(r)).join('\n') : JSON.stringify(rows));
  return path;
}

/**
 * Replicas of the service on one PostgreSQL schema share the outbox: an event whose process
 * dies mid-delivery is delivered by another after the claim's lease, and events are never
 * sent by two replicas at once.
 */
describe('webhooks with two service processes (postgres)', () => {
  // Leases of 2 x 2 s; quick polls so that the replicas compete for every event.
  const { env, drop } = isolatedConfig({ ...QUICK_WEBHOOKS, WEBHOOKS_POLL_MS: '20', MIGRATIONS_RUN: 'false' });
  const receiver = new WebhookReceiver();
  const arrivals = (): Promise<Received[]> => Promise.resolve(receiver.received);
  let credential: string;

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    for (const [id, brand, branch] of [[1001, 5, 'B-1'], [1002, 21, 'B-9']] as const) {
      await cliJson(['clients', 'add', '--id', String(id), '--name', `Client ${id}`], env);
      await cliJson(['brands', 'add', '--client', String(id), '--id', String(brand), '--name', `Brand ${brand}`], env);
      await cliJson(['branches', 'import', '--client', String(id), file(`branches-${id}.json`, [{ id: branch, name: branch, branchCode: null, brandId: brand }])], env);
    }
    credential = (await cliJson<{ clientId: string }>(['credentials', 'add', '--clients', '1001,1002', '--scopes', 'visits/standard.read'], env)).clientId;
    await receiver.start();
  });
  afterAll(async () => {
    await receiver.stop();
    await drop();
  });

  it('delivers the event of a process killed mid-delivery from the other process', async () => {
    const { id, secret } = await cliJson<{ id: string; secret: string }>(['webhooks', 'add', credential, '--url', `${receiver.url}/killed`], env);
    receiver.answer = (_r, i) => (i === 0 ? 'hang' : { status: 200 });
    const first = await startService(env);
    await cliJson(['visits', 'import', file('killed.ndjson', [visitRecord(1, 'B-1'), visitRecord(2, 'B-1')])], env);
    const [held] = await eventually(arrivals, (r) => r.length === 1, 60_000, 50);
    await first.stop('SIGKILL');

    const second = await startService(env);
    try {
      const [, delivered] = await eventually(arrivals, (r) => r.length === 2, 60_000, 50);
      expect(delivered.json).toEqual(held.json);
      expect(delivered.json.data).toEqual({ svcClientId: 1001, count: 2 });
      expect(verifyWebhook(delivered.raw, String(delivered.headers['svc-signature']), secret)).toBe(true);
      const [listed] = await eventually(
        () => cliJson<{ pendingEvents: number }[]>(['webhooks', 'list'], env),
        ([e]) => e?.pendingEvents === 0,
        30_000,
        100,
      );
      expect(listed).toMatchObject({ pendingEvents: 0 });
      expect(receiver.received).toHaveLength(2);
    } finally {
      await second.stop();
      await cliJson(['webhooks', 'remove', id], env);
    }
  });

  it('delivers each event exactly once when two processes share the outbox', async () => {
    receiver.received.length = 0;
    // A short pause before each answer: a second sender of an event would be caught in the act.
    receiver.answer = () => ({ status: 200, delayMs: 30 });
    const endpoints = 20;
    for (let i = 0; i < endpoints; i++) await cliJson(['webhooks', 'add', credential, '--url', `${receiver.url}/e${i}`], env);
    const [a, b] = await Promise.all([startService(env), startService(env)]);
    try {
      // Two imports of both clients, far enough apart to be separate events: 4 per endpoint.
      let visit = 100;
      for (const round of ['one', 'two']) {
        await cliJson(['visits', 'import', file(`${round}.ndjson`, [visitRecord(visit++, 'B-1'), visitRecord(visit++, 'B-1'), visitRecord(visit++, 'B-9')])], env);
        await eventually(arrivals, (r) => r.length >= (round === 'one' ? 2 : 4) * endpoints, 60_000, 50);
      }
      const pending = await eventually(
        () => cliJson<{ pendingEvents: number }[]>(['webhooks', 'list'], env),
        (all) => all.every((e) => e.pendingEvents === 0),
        30_000,
        100,
      );
      expect(pending.map((e) => e.pendingEvents)).toEqual(Array(endpoints).fill(0));

      const ids = receiver.received.map((r) => r.json.id);
      expect(ids).toHaveLength(4 * endpoints);
      expect(new Set(ids).size).toBe(ids.length);
      const perPath = new Map<string, number[]>();
      for (const r of receiver.received) perPath.set(r.path, [...(perPath.get(r.path) ?? []), Number(r.json.data.count)]);
      for (let i = 0; i < endpoints; i++) expect([`/e${i}`, perPath.get(`/e${i}`)?.sort()]).toEqual([`/e${i}`, [1, 1, 2, 2]]);
    } finally {
      await Promise.all([a.stop(), b.stop()]);
    }
  });
});
