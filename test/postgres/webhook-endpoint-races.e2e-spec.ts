import { DataSource } from 'typeorm';
import { webhookSecretBox } from '../../src/webhooks/webhook-secrets.js';
import { WebhookEndpoint } from '../../src/webhooks/entities/webhook-endpoint.entity.js';
import { WebhooksRepository, type ClaimedDelivery } from '../../src/webhooks/webhooks.repository.js';
import { WebhooksService } from '../../src/webhooks/webhooks.service.js';
import { issueCredential } from '../helpers/auth.js';
import { backendPid, behindALock, queuedBehind, withConnection } from '../helpers/pg-locks.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { QUICK_WEBHOOKS, seedWebhookClients } from '../helpers/webhooks-fixture.js';

/**
 * Operators changing webhook endpoints while imports write events, and while other operators
 * change them, on PostgreSQL (several replicas and CLI runs share the database). Each race is
 * made certain by holding the lock the other party would hold, then waiting until the party
 * under test is queued behind it.
 */
describe('webhook endpoints changed at once (postgres)', () => {
  let t: TestApp;
  let db: DataSource;
  let service: WebhooksService;
  // No receiver answers: nothing here is delivered (the dispatcher's polls find no due event for minutes).
  const url = (path: string) => `http://127.0.0.1:9/${path}`;

  beforeAll(async () => {
    t = await startTestApp({ ...QUICK_WEBHOOKS, WEBHOOKS_COALESCE_MS: String(10 * 60_000) });
    await seedWebhookClients(t);
    db = t.app.get(DataSource);
    service = t.app.get(WebhooksService);
  });
  afterAll(async () => {
    await t.close();
  });

  const deliveriesOf = async (endpointId: string): Promise<number> =>
    Number((await db.query<{ n: string }[]>('SELECT COUNT(*) AS n FROM webhook_deliveries WHERE endpoint_id = $1', [endpointId]))[0].n);

  it('removes an endpoint while an import writing events has read it: the removal waits, the import completes', async () => {
    const credential = await issueCredential(t, { clients: [1001] });
    const a = await service.add(credential.clientId, url('a'));
    const b = await service.add(credential.clientId, url('b'));
    const [first, second] = [a.id, b.id].sort();
    const repo = t.app.get(WebhooksRepository);
    const change = [{ clientId: 1001, brandId: 5, visitType: 'MV' }];
    // An open event for the first endpoint only.
    await db.transaction((tx) => repo.recordVisitChanges(tx, change, new Date()));
    await db.query('DELETE FROM webhook_deliveries WHERE endpoint_id = $1', [second]);
    expect([await deliveriesOf(first), await deliveriesOf(second)]).toEqual([1, 0]);

    await withConnection(db, (holder) =>
      withConnection(db, async (visitsImport) => {
        // Asked before the import's connection is busy with a query that waits.
        const [holderPid, importPid] = [await backendPid(holder), await backendPid(visitsImport)];
        // Another writer holds the first endpoint's open event: the import reads the endpoints, then waits there.
        await holder.startTransaction();
        await holder.query('SELECT 1 FROM webhook_deliveries WHERE endpoint_id = $1 FOR UPDATE', [first]);
        await visitsImport.startTransaction();
        const importing = repo.recordVisitChanges(visitsImport.manager, change, new Date()).then(() => visitsImport.commitTransaction());
        importing.catch(() => undefined);
        expect(await queuedBehind(db, holderPid)).toBe(1);
        // The removal of the second endpoint, which the import has read and will write an event for, waits for the import.
        const removing = service.remove(second);
        removing.catch(() => undefined);
        expect(await queuedBehind(db, importPid)).toBe(1);
        await holder.commitTransaction();
        await expect(importing).resolves.toBeUndefined();
        await expect(removing).resolves.toBeUndefined();
      }),
    );
    expect((await service.list()).map((e) => e.id)).toEqual(expect.not.arrayContaining([second]));
    expect(await deliveriesOf(second)).toBe(0);
    // The import's change counted for the endpoint that stays.
    expect(Number((await db.query<{ count: string }[]>('SELECT count FROM webhook_deliveries WHERE endpoint_id = $1', [first]))[0].count)).toBe(2);
    await service.remove(first);
  });

  it.each([
    ['delivered', (repo: WebhooksRepository, d: ClaimedDelivery) => repo.delivered(d, new Date())],
    ['retried later', (repo: WebhooksRepository, d: ClaimedDelivery) => repo.retryLater(d, new Date(Date.now() + 60_000), 'HTTP 500', new Date())],
    ['given up', (repo: WebhooksRepository, d: ClaimedDelivery) => repo.giveUp(d, 'HTTP 500', new Date())],
  ])('removes an endpoint while an attempt of its event is %s: the removal waits for it, both complete', async (_outcome, report) => {
    const credential = await issueCredential(t, { clients: [1001] });
    const { id } = await service.add(credential.clientId, url('attempted'));
    const repo = t.app.get(WebhooksRepository);
    await db.transaction((tx) => repo.recordVisitChanges(tx, [{ clientId: 1001, brandId: 5, visitType: 'MV' }], new Date()));
    // Claimed as the dispatcher would once the event is due (in two hours: this file's own dispatcher never is).
    const later = new Date(Date.now() + 7_200_000);
    const claimed = await repo.claim({ now: later, limit: 10, inFlight: new Map(), perEndpoint: 1, leaseMs: 0, lockToken: 'attempt' });
    const attempt = claimed.find((d) => d.endpointId === id)!;
    expect(attempt).toMatchObject({ endpointId: id, attempts: 1 });

    await withConnection(db, async (holder) => {
      const holderPid = await backendPid(holder);
      // The event's row is held elsewhere: the report of the attempt waits there, then the removal comes.
      await holder.startTransaction();
      await holder.query('SELECT 1 FROM webhook_deliveries WHERE event_id = $1 FOR UPDATE', [attempt.eventId]);
      const reporting = report(repo, attempt);
      reporting.catch(() => undefined);
      expect(await queuedBehind(db, holderPid)).toBe(1);
      const removing = service.remove(id);
      removing.catch(() => undefined);
      expect(await queuedBehind(db, holderPid, 2)).toBe(2);
      await holder.commitTransaction();
      // Taking the event before its endpoint, the report held the event while the removal held the endpoint: deadlock detected.
      await expect(reporting).resolves.toBeUndefined();
      await expect(removing).resolves.toBeUndefined();
    });
    expect((await service.list()).map((e) => e.id)).not.toContain(id);
    expect(await deliveriesOf(id)).toBe(0);
  });

  it('adds one endpoint, not two, when two adds of one URL run at once', async () => {
    const credential = await issueCredential(t, { clients: [1001] });
    const { queued, outcomes } = await behindALock(db, 'SELECT 1 FROM credentials WHERE client_id = $1 FOR NO KEY UPDATE', [credential.clientId], () => [
      service.add(credential.clientId, url('twice')),
      service.add(credential.clientId, url('twice')),
    ]);
    expect(queued).toBe(2);
    const added = outcomes.flatMap((o) => (o.status === 'fulfilled' ? [o.value.id] : []));
    const refused = outcomes.filter((o): o is PromiseRejectedResult => o.status === 'rejected').map((o) => (o.reason as Error).message);
    expect(added).toHaveLength(1);
    expect(refused).toEqual([`--url: credential ${credential.clientId} has an endpoint at ${url('twice')} already (${added[0]})`]);
    const stored = await db.getRepository(WebhookEndpoint).findBy({ credentialId: credential.clientId });
    expect(stored.map((e) => e.id)).toEqual(added);
    await service.remove(added[0]);
  });

  it('keeps both of two rotations at once: the later one retires the secret before both', async () => {
    const credential = await issueCredential(t, { clients: [1001] });
    const { id, secret: original } = await service.add(credential.clientId, url('rotated'));
    const { queued, outcomes } = await behindALock(db, 'SELECT 1 FROM webhook_endpoints WHERE id = $1 FOR NO KEY UPDATE', [id], () => [
      service.rotateSecret(id),
      service.rotateSecret(id),
    ]);
    expect(queued).toBe(2);
    const rotations = outcomes.map((o) => (o.status === 'fulfilled' ? o.value.issued : null));
    // One rotated the original away (keeping it for a while), the other rotated that one's secret, ending the original at once.
    const earlier = rotations.find((r) => r?.secretDroppedEarly === null)!;
    const later = rotations.find((r) => r && r.secretDroppedEarly !== null)!;
    expect(earlier).toBeDefined();
    expect(later).toBeDefined();
    const box = webhookSecretBox(t.config.API_KEY_HASH_KEY);
    const stored = (await db.getRepository(WebhookEndpoint).findOneBy({ id }))!;
    expect(box.open(stored.secret)).toBe(later.secret);
    expect(box.open(stored.previousSecret!)).toBe(earlier.secret);
    expect([later.secret, earlier.secret]).not.toContain(original);
    await service.remove(id);
  });
});
