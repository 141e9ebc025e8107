import { readFileSync } from 'node:fs';
import { jest } from '@jest/globals';
import { DataSource, type EntityManager } from 'typeorm';
import request from 'supertest';
import { verifyWebhook } from '../examples/verify-webhook.js';
import { CredentialsService } from '../src/auth/credentials.service.js';
import { MetricsService } from '../src/metrics/metrics.service.js';
import { readVisitRecord } from '../src/visits/visit-record.js';
import { VisitsRepository } from '../src/visits/visits.repository.js';
import { WebhookDelivery } from '../src/webhooks/entities/webhook-delivery.entity.js';
import { WebhooksRepository } from '../src/webhooks/webhooks.repository.js';
import { WebhooksService, type EndpointSummary } from '../src/webhooks/webhooks.service.js';
import { issueCredential } from './helpers/auth.js';
import { webhookViolations } from './helpers/contract.js';
import { eventually } from './helpers/eventually.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { importVisits } from './helpers/visits-fixture.js';
import { WebhookReceiver, type Received } from './helpers/webhook-receiver.js';
import { pendingEvents, QUICK_WEBHOOKS, seedWebhookClients, visitRecord } from './helpers/webhooks-fixture.js';

/** What a receiver can check of every delivery: the contract, the headers and the README's verifier. */
function expectSigned(r: Received, secret: string): void {
  expect(webhookViolations(r.headers, r.raw)).toEqual([]);
  expect(r.headers['content-type']).toBe('application/json');
  expect(r.headers['svc-event-id']).toBe(r.json.id);
  expect(verifyWebhook(r.raw, String(r.headers['svc-signature']), secret)).toBe(true);
}

describe(`webhooks (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  /** A receiver of each test's own: a late request of an earlier test's endpoint never reaches it. */
  let receiver: WebhookReceiver;
  let nextVisit = 1;
  const ids = (n: number): number[] => Array.from({ length: n }, () => nextVisit++);

  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_SECONDS: '0', ...QUICK_WEBHOOKS, WEBHOOKS_CONCURRENCY_PER_ENDPOINT: '1' });
    await seedWebhookClients(t);
  });
  afterAll(() => t.close());
  beforeEach(async () => {
    receiver = await new WebhookReceiver().start();
  });
  afterEach(async () => {
    await receiver.stop();
    const service = t.app.get(WebhooksService);
    for (const endpoint of await service.list()) await service.remove(endpoint.id);
  });

  /** A credential of `clients` (further restricted as given) with an endpoint at `path` of the receiver. */
  async function endpointFor(path: string, input: Parameters<typeof issueCredential>[1] = {}): Promise<{ id: string; secret: string }> {
    const credential = await issueCredential(t, input);
    return t.app.get(WebhooksService).add(credential.clientId, `${receiver.url}${path}`);
  }

  const arrivals = (): Promise<Received[]> => Promise.resolve(receiver.received);

  /** Waits until the outbox is empty: every event delivered or given up, none left to come. */
  const settled = async (): Promise<void> => {
    expect(await eventually(() => pendingEvents(t), (n) => n === 0, 30_000, 50)).toBe(0);
  };

  it('sends a thin visits.changed event, signed so that the README code verifies it, to the entitled endpoints only', async () => {
    const { secret } = await endpointFor('/all', { clients: [1001] });
    await endpointFor('/other', { clients: [1002] });
    await importVisits(t, ids(3).map((id) => visitRecord(id, 'B-1')));
    const [event] = await eventually(arrivals, (r) => r.length > 0, 30_000, 50);
    await settled();

    expect(receiver.received).toHaveLength(1);
    expect(event.path).toBe('/all');
    expectSigned(event, secret);
    expect(event.headers['svc-signature']).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(Object.keys(event.json)).toEqual(['id', 'type', 'created', 'data']);
    expect(event.json).toEqual({
      id: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
      type: 'visits.changed',
      created: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
      data: { svcClientId: 1001, count: 3 },
    });
    const [listed] = (await t.app.get(WebhooksService).list()).filter((e) => e.url.endsWith('/all'));
    expect(listed).toMatchObject({ state: 'active', failingSince: null, lastError: null, pendingEvents: 0 });
    expect(listed.lastDeliveryAt).not.toBeNull();
  });

  it('writes nothing for a re-import that changes nothing, nor for an import that rolls back', async () => {
    await endpointFor('/all', { clients: [1001] });
    const [first, second] = ids(2);
    await importVisits(t, [visitRecord(first, 'B-1')]);
    await eventually(arrivals, (r) => r.length === 1, 30_000, 50);
    await settled();

    await importVisits(t, [visitRecord(first, 'B-1')]);
    expect(await pendingEvents(t)).toBe(0);
    // A batch that fails after its events were written (an unknown branch): the transaction, events included, rolls back.
    const broken = readVisitRecord(visitRecord(second, 'B-1')).record!.visit;
    broken.branchId = 'NO-SUCH';
    await expect(t.app.get(VisitsRepository).upsertBatch([broken])).rejects.toThrow();
    expect(await pendingEvents(t)).toBe(0);

    await importVisits(t, [visitRecord(first, 'B-1', 'MV', 12)]);
    await eventually(arrivals, (r) => r.length === 2, 30_000, 50);
    await settled();
    expect(receiver.received.map((r) => r.json.data)).toEqual([
      { svcClientId: 1001, count: 1 },
      { svcClientId: 1001, count: 1 },
    ]);
  });

  it('tells a credential restricted to brands or visit types only of the changes it may read', async () => {
    await endpointFor('/all', { clients: [1001] });
    await endpointFor('/brand-5', { clients: [1001], brands: [5] });
    await endpointFor('/type-of', { clients: [1001], visitTypes: ['OF'] });
    await endpointFor('/brand-6-ta', { clients: [1001], brands: [6], visitTypes: ['TA'] });
    await endpointFor('/both-clients', { clients: [1001, 1002] });
    const [a, b, c, d, e] = ids(5);
    await importVisits(t, [
      visitRecord(a, 'B-1', 'MV'),
      visitRecord(b, 'B-1', 'OF'),
      visitRecord(c, 'B-2', 'OF'),
      visitRecord(d, 'B-2', 'MV'),
      visitRecord(e, 'B-9', 'MV'),
    ]);
    await eventually(arrivals, (r) => r.length >= 5, 30_000, 50);
    await settled();

    const told = receiver.received.map((r) => [r.path, r.json.data]).sort((x, y) => JSON.stringify(x).localeCompare(JSON.stringify(y)));
    expect(told).toEqual([
      ['/all', { svcClientId: 1001, count: 4 }],
      ['/both-clients', { svcClientId: 1001, count: 4 }],
      ['/both-clients', { svcClientId: 1002, count: 1 }],
      ['/brand-5', { svcClientId: 1001, count: 2 }],
      ['/type-of', { svcClientId: 1001, count: 2 }],
    ]);
  });

  it('tells a restricted credential of a visit that left what it may read (its feed reports it removed)', async () => {
    await endpointFor('/brand-5', { clients: [1001], brands: [5] });
    await endpointFor('/brand-6', { clients: [1001], brands: [6] });
    await endpointFor('/type-ta', { clients: [1001], visitTypes: ['TA'] });
    const [x] = ids(1);
    await importVisits(t, [visitRecord(x, 'B-1', 'MV')]);
    await eventually(arrivals, (r) => r.length >= 1, 30_000, 50);
    await settled();
    receiver.received.length = 0;

    // From brand 5 to brand 6: both brands' credentials are told; a TA-only one had it in neither state.
    await importVisits(t, [visitRecord(x, 'B-2', 'MV')]);
    await eventually(arrivals, (r) => r.length >= 2, 30_000, 50);
    await settled();
    const told = receiver.received.map((r) => [r.path, r.json.data]).sort((p, q) => JSON.stringify(p).localeCompare(JSON.stringify(q)));
    expect(told).toEqual([
      ['/brand-5', { svcClientId: 1001, count: 1 }],
      ['/brand-6', { svcClientId: 1001, count: 1 }],
    ]);
  });

  it('retries timeouts, redirects, 5xx and 429 with growing waits, the same event each time, until a 2xx', async () => {
    const { secret } = await endpointFor('/flaky', { clients: [1001] });
    const answers = ['hang', { status: 302, headers: { location: `${receiver.url}/elsewhere` } }, { status: 503 }, { status: 429 }, { status: 500, body: 'boom' }] as const;
    receiver.answer = (_r, i) => answers[i] ?? { status: 200 };
    await importVisits(t, ids(2).map((id) => visitRecord(id, 'B-1')));
    await eventually(arrivals, (r) => r.length === 6, 60_000, 50);
    await settled();

    expect(receiver.received).toHaveLength(6);
    expect(receiver.received.map((r) => r.path)).toEqual(Array(6).fill('/flaky'));
    for (const r of receiver.received) expectSigned(r, secret);
    expect(new Set(receiver.received.map((r) => r.raw)).size).toBe(1);
    expect(receiver.received[0].json.data).toEqual({ svcClientId: 1001, count: 2 });
    // Waits of base 100 ms doubled per attempt, at least half of each (jitter): 50, 100, 200, 400, 800 ms.
    const gaps = receiver.received.slice(1).map((r, i) => r.at - receiver.received[i].at);
    [2000 + 50, 100, 200, 400, 800].forEach((least, i) => expect([i, gaps[i] >= least]).toEqual([i, true]));
    const [listed] = await t.app.get(WebhooksService).list();
    expect(listed).toMatchObject({ state: 'active', failingSince: null, lastError: 'HTTP 500: boom', pendingEvents: 0 });
  });

  it('delivers every event to a receiver that was down for a while, once it is back; the metrics show the outbox', async () => {
    const { secret } = await endpointFor('/hook', { clients: [1001, 1002] });
    await receiver.stop();
    try {
      await importVisits(t, ids(2).map((id) => visitRecord(id, 'B-1')));
      await importVisits(t, ids(1).map((id) => visitRecord(id, 'B-9')));
      const [listed] = await eventually(() => t.app.get(WebhooksService).list(), ([e]) => e?.lastError !== null, 30_000, 50);
      expect(listed.lastError).toMatch(/ECONNREFUSED/);
      const metrics = await t.app.get(MetricsService).registry.metrics();
      expect(metrics).toMatch(/^results_webhook_outbox_depth 2$/m);
      expect(Number(/^results_webhook_outbox_oldest_age_seconds (\S+)$/m.exec(metrics)?.[1])).toBeGreaterThan(0);
      expect(metrics).toMatch(/^results_webhook_deliveries_total\{outcome="failed"\} [1-9]/m);
    } finally {
      await receiver.start();
    }
    await eventually(arrivals, (r) => r.length >= 2, 60_000, 50);
    await settled();

    for (const r of receiver.received) expectSigned(r, secret);
    expect(receiver.received.map((r) => r.json.data).sort((a, b) => Number(a.svcClientId) - Number(b.svcClientId))).toEqual([
      { svcClientId: 1001, count: 2 },
      { svcClientId: 1002, count: 1 },
    ]);
    const metrics = await t.app.get(MetricsService).registry.metrics();
    expect(metrics).toMatch(/^results_webhook_outbox_depth 0$/m);
    expect(metrics).toMatch(/^results_webhook_outbox_oldest_age_seconds 0$/m);
    expect(metrics).toMatch(/^results_webhook_deliveries_total\{outcome="delivered"\} [1-9]/m);
    expect(metrics).toMatch(/^results_webhook_delivery_duration_seconds_count\{outcome="delivered"\} [1-9]/m);
  });

  it('answers a scrape in a few seconds when the database does not answer the outbox query, the outbox gauges left as they were', async () => {
    const registry = t.app.get(MetricsService).registry;
    const depth = (text: string): string | undefined => /^results_webhook_outbox_depth (\S+)$/m.exec(text)?.[1];
    const before = depth(await registry.metrics());
    let answer!: () => void;
    // A query that waits for a connection of a full pool, or on a database that stopped answering:
    // it ends only at DATABASE_QUERY_TIMEOUT_MS (10 s), Prometheus's own scrape timeout.
    const hung = jest
      .spyOn(t.app.get(WebhooksRepository), 'outboxStats')
      .mockImplementation(() => new Promise((resolve) => (answer = () => resolve({ depth: 7, oldest: null, now: new Date() }))));
    try {
      const started = performance.now();
      const scraped = await Promise.race([registry.metrics(), new Promise((resolve) => setTimeout(resolve, 5000, 'no answer within 5 s'))]);
      expect(performance.now() - started).toBeLessThan(5000);
      expect(scraped).toMatch(/^results_db_pool_waiting_requests \d+$/m);
      expect(depth(String(scraped))).toBe(before);
    } finally {
      answer();
      hung.mockRestore();
    }
  });

  it('withdraws the events waiting for a credential that may no longer read their client: narrowed to another client, or left no visits scope', async () => {
    const narrowedToClient = await issueCredential(t, { clients: [1001, 1002] });
    const leftNoScope = await issueCredential(t, { clients: [1001] });
    const kept = await issueCredential(t, { clients: [1001] });
    const service = t.app.get(WebhooksService);
    for (const [credential, path] of [[narrowedToClient, '/narrowed'], [leftNoScope, '/unscoped'], [kept, '/kept']] as const) {
      await service.add(credential.clientId, `${receiver.url}${path}`);
    }
    await receiver.stop();
    try {
      await importVisits(t, ids(2).map((id) => visitRecord(id, 'B-1')));
      await eventually(() => pendingEvents(t), (n) => n === 3, 30_000, 50);
      const credentials = t.app.get(CredentialsService);
      await credentials.update(narrowedToClient.clientId, { clients: [1002] });
      await credentials.update(leftNoScope.clientId, { scopes: ['branches/standard.read'] });
    } finally {
      await receiver.start();
    }
    await settled();
    // Only the credential that may still read client 1001 is told of its changes.
    expect(receiver.received.map((r) => [r.path, r.json.data])).toEqual([['/kept', { svcClientId: 1001, count: 2 }]]);
  });

  it('lets a slow receiver hold only its own slots: another endpoint is served meanwhile', async () => {
    await endpointFor('/slow', { clients: [1001, 1002] });
    await endpointFor('/fast', { clients: [1001] });
    let stuck = true;
    receiver.answer = (r) => (r.path === '/slow' && stuck ? 'hang' : { status: 200 });
    await importVisits(t, [visitRecord(ids(1)[0], 'B-1'), visitRecord(ids(1)[0], 'B-9')]);
    await eventually(arrivals, (r) => r.some((x) => x.path === '/slow'), 30_000, 50);
    // The slow endpoint has two events and answers neither; a change now is still told to the fast one.
    await importVisits(t, [visitRecord(ids(1)[0], 'B-1')]);
    await eventually(arrivals, (r) => r.filter((x) => x.path === '/fast').length === 2, 30_000, 50);
    expect(receiver.received.filter((r) => r.path === '/slow').every((r) => r.headers['svc-event-id'] !== undefined)).toBe(true);
    expect(receiver.received.filter((r) => r.path === '/fast').map((r) => r.json.data)).toEqual([
      { svcClientId: 1001, count: 1 },
      { svcClientId: 1001, count: 1 },
    ]);
    stuck = false;
    await settled();

    const slow = receiver.received.filter((r) => r.path === '/slow');
    // One request at a time to the slow endpoint (WEBHOOKS_CONCURRENCY_PER_ENDPOINT=1), though several events waited for it.
    expect(slow.map((r) => r.openOnPath)).toEqual(slow.map(() => 1));
    expect(new Set(slow.map((r) => r.json.data.svcClientId))).toEqual(new Set([1001, 1002]));
  });

  it("claims another endpoint's event past one endpoint's backlog of older due events", async () => {
    const failing = await endpointFor('/backlog', { clients: [1001] });
    const healthy = await endpointFor('/healthy', { clients: [1001] });
    // Due an hour from now, for a claim made two hours from now: the running dispatcher leaves them be.
    const hour = Date.now() + 3_600_000;
    const event = (endpointId: string, i: number) => ({
      eventId: `evt_${String(i).padStart(32, '0')}`,
      endpointId,
      type: 'visits.changed',
      clientId: 1001,
      count: 1,
      createdAt: new Date(hour),
      dueAt: new Date(hour + i),
      attempts: 3,
    });
    // A receiver failing for hours: a hundred events came due before the other endpoint's one.
    await t.app.get(DataSource).getRepository(WebhookDelivery).insert([...Array.from({ length: 100 }, (_, i) => event(failing.id, i)), event(healthy.id, 100)]);
    const claimAt = new Date(hour + 3_600_000);
    const claimed = await t.app.get(WebhooksRepository).claim({
      now: claimAt,
      limit: 10,
      inFlight: new Map(),
      perEndpoint: 2,
      leaseMs: 60_000,
      lockToken: 'test-claim',
    });
    expect(claimed.filter((d) => d.endpointId === failing.id)).toHaveLength(2);
    expect(claimed.filter((d) => d.endpointId === healthy.id).map((d) => d.eventId)).toEqual([event(healthy.id, 100).eventId]);
    // The failing endpoint's other events wait, unclaimed, for its slots.
    const leased = await t.app.get(DataSource).getRepository(WebhookDelivery).countBy({ lockToken: 'test-claim' });
    expect(leased).toBe(3);
  });

  it('leases a claimed event from when it was claimed: a claim that waited does not hand out a lease already spent', async () => {
    const endpoint = await endpointFor('/leased', { clients: [1001] });
    // Due an hour from now, for claims made two hours from now: the running dispatcher leaves it be.
    const hour = Date.now() + 3_600_000;
    await t.app.get(DataSource).getRepository(WebhookDelivery).insert({
      eventId: `evt_${'1'.repeat(32)}`,
      endpointId: endpoint.id,
      type: 'visits.changed',
      clientId: 1001,
      count: 1,
      createdAt: new Date(hour),
      dueAt: new Date(hour),
      attempts: 0,
    });
    const repo = t.app.get(WebhooksRepository);
    const claimAt = (at: number, lockToken: string) => repo.claim({ now: new Date(at), limit: 1, inFlight: new Map(), perEndpoint: 1, leaseMs: 20_000, lockToken });
    const looked = hour + 3_600_000;
    // The claim looked at `looked`, then waited 15 s (for a connection, or SQLite's write lock) before it took the event.
    // The outbox's clock (the database's on PostgreSQL, the process's on SQLite) reads the time the claim took the event.
    const clock = jest.spyOn(repo, 'now').mockResolvedValue(new Date(looked + 15_000));
    let first: Awaited<ReturnType<typeof repo.claim>>;
    try {
      first = await claimAt(looked, 'waited');
    } finally {
      clock.mockRestore();
    }
    expect(first.map((d) => d.lockToken)).toEqual(['waited']);
    // 25 s after the look, 10 s into its request: the event is still leased, so no other claim sends it meanwhile.
    expect(await claimAt(looked + 25_000, 'meanwhile')).toEqual([]);
    expect((await claimAt(looked + 36_000, 'after-the-lease')).map((d) => d.lockToken)).toEqual(['after-the-lease']);
  });

  it('keeps readiness unaffected by a failing receiver', async () => {
    await endpointFor('/down', { clients: [1001] });
    receiver.answer = () => ({ status: 500 });
    await importVisits(t, ids(1).map((id) => visitRecord(id, 'B-1')));
    await eventually(arrivals, (r) => r.length >= 2, 30_000, 50);
    const ready = await request(t.http).get('/health/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toMatchObject({ status: 'ok' });
  });

  it('sends nothing for a disabled endpoint, a disabled credential, or a credential that may read no visits', async () => {
    const off = await endpointFor('/off', { clients: [1001] });
    await t.app.get(WebhooksService).setDisabled(off.id, true);
    const partner = await issueCredential(t, { clients: [1001] });
    await t.app.get(WebhooksService).add(partner.clientId, `${receiver.url}/credential-off`);
    await t.app.get(CredentialsService).disable(partner.clientId);
    // An uploader's credential: it may not read visits, so it learns nothing of them, not even a count.
    const uploader = await issueCredential(t, { clients: [1001], scopes: ['menus/dishes/standard.write'] });
    await expect(t.app.get(WebhooksService).add(uploader.clientId, `${receiver.url}/uploader`)).rejects.toThrow(
      `credential ${uploader.clientId} may read no visits (neither visits/standard.read nor visits/plus.read): its endpoint would never be told of a change`,
    );
    // One whose visits scopes were taken away after its endpoint was added.
    const narrowed = await issueCredential(t, { clients: [1001] });
    await t.app.get(WebhooksService).add(narrowed.clientId, `${receiver.url}/narrowed`);
    await t.app.get(DataSource).query(`UPDATE credentials SET scopes = 'branches/standard.read menus/standard.read' WHERE client_id = '${narrowed.clientId}'`);
    await endpointFor('/on', { clients: [1001] });
    await importVisits(t, ids(1).map((id) => visitRecord(id, 'B-1')));
    await eventually(arrivals, (r) => r.length > 0, 30_000, 50);
    await settled();
    expect(receiver.received.map((r) => r.path)).toEqual(['/on']);
  });

  it('claims nothing for the events a disabled endpoint keeps, and sends them once it is enabled', async () => {
    let refuse = true;
    receiver.answer = () => (refuse ? { status: 500 } : { status: 200 });
    const held = await endpointFor('/held', { clients: [1001] });
    await importVisits(t, ids(1).map((id) => visitRecord(id, 'B-1')));
    await t.app.get(WebhooksService).setDisabled(held.id, true);
    // Its event waits, due (a first attempt, if one was made before the disable, is retried within a second).
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await pendingEvents(t)).toBe(1);
    const claim = jest.spyOn(t.app.get(WebhooksRepository), 'claim');
    try {
      await new Promise((resolve) => setTimeout(resolve, 1000));
      // Polled every 50 ms: a claim on each poll would have opened some twenty transactions for nothing.
      expect(claim).not.toHaveBeenCalled();
      refuse = false;
      await t.app.get(WebhooksService).setDisabled(held.id, false);
      await settled();
      expect(claim).toHaveBeenCalled();
      expect(receiver.received.at(-1)).toMatchObject({ path: '/held', json: { type: 'visits.changed' } });
    } finally {
      claim.mockRestore();
    }
  });
});

describe(`webhooks: coalescing and giving up (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let receiver: WebhookReceiver;
  const WINDOW_MS = 3000;

  beforeAll(async () => {
    // A window long enough for several imports on a busy machine; retries over 5.4 s after the first change.
    t = await startTestApp({ ...QUICK_WEBHOOKS, WEBHOOKS_COALESCE_MS: String(WINDOW_MS), WEBHOOKS_RETRY_HOURS: '0.0015' });
    await seedWebhookClients(t);
    receiver = await new WebhookReceiver().start();
  });
  afterAll(async () => {
    await receiver.stop();
    await t.close();
  });

  const arrivals = (): Promise<Received[]> => Promise.resolve(receiver.received);

  it('coalesces the changes of one client within the window into one event, per client', async () => {
    const credential = await issueCredential(t, { clients: [1001, 1002] });
    const { id, secret } = await t.app.get(WebhooksService).add(credential.clientId, `${receiver.url}/coalesced`);
    const started = Date.now();
    await importVisits(t, [visitRecord(101, 'B-1'), visitRecord(102, 'B-2')]);
    await importVisits(t, [visitRecord(103, 'B-1')]);
    await importVisits(t, [visitRecord(104, 'B-9')]);
    await importVisits(t, [visitRecord(101, 'B-1', 'MV', 55)]);
    await eventually(arrivals, (r) => r.length === 2, 30_000, 50);
    expect(await eventually(() => pendingEvents(t), (n) => n === 0, 30_000, 50)).toBe(0);

    expect(receiver.received.map((r) => r.json.data).sort((a, b) => Number(a.svcClientId) - Number(b.svcClientId))).toEqual([
      { svcClientId: 1001, count: 4 },
      { svcClientId: 1002, count: 1 },
    ]);
    for (const r of receiver.received) {
      expect(verifyWebhook(r.raw, String(r.headers['svc-signature']), secret)).toBe(true);
      // Sent once the window after the client's first change was over.
      expect(r.at - started).toBeGreaterThanOrEqual(WINDOW_MS);
    }
    await t.app.get(WebhooksService).remove(id);
  });

  it('gives an event a new id when later changes join it: an event a restore brought back after its delivery is not taken for that delivery', async () => {
    const credential = await issueCredential(t, { clients: [1001] });
    const { id, secret } = await t.app.get(WebhooksService).add(credential.clientId, `${receiver.url}/restored`);
    const outbox = t.app.get(DataSource).getRepository(WebhookDelivery);
    const delivered = (): Promise<Received[]> => Promise.resolve(receiver.received.filter((r) => r.path === '/restored'));

    await importVisits(t, [visitRecord(301, 'B-1')]);
    // The outbox as a backup taken now holds it: the event waiting, no attempt made.
    const [backedUp] = await outbox.find({ where: { endpointId: id } });
    expect(backedUp).toMatchObject({ attempts: 0, count: 1 });
    const [first] = await eventually(delivered, (r) => r.length === 1, 30_000, 50);
    // Its delivery recorded: the receiver's answer has reached the service, which removed the event.
    await eventually(() => outbox.count({ where: { endpointId: id } }), (n) => n === 0, 30_000, 50);

    // The backup restored: the event waits again (here still within its window, so that the
    // import below meets it before a claim), then a change written after the restore joins it.
    await outbox.insert({ ...backedUp, dueAt: new Date(Date.now() + WINDOW_MS) });
    await importVisits(t, [visitRecord(302, 'B-1')]);
    const [, second] = await eventually(delivered, (r) => r.length === 2, 30_000, 50);
    expect(await eventually(() => pendingEvents(t), (n) => n === 0, 30_000, 50)).toBe(0);

    expect(first.json).toEqual({ id: backedUp.eventId, type: 'visits.changed', created: backedUp.createdAt.toISOString(), data: { svcClientId: 1001, count: 1 } });
    // A receiver that ignores an id it has processed must not drop the change written after the restore.
    expect(second.json).toEqual({ id: expect.stringMatching(/^evt_[0-9a-f]{32}$/), type: 'visits.changed', created: backedUp.createdAt.toISOString(), data: { svcClientId: 1001, count: 2 } });
    expect(second.json.id).not.toBe(first.json.id);
    for (const r of [first, second]) {
      expect(r.headers['svc-event-id']).toBe(r.json.id);
      expect(r.headers['content-type']).toBe('application/json');
      expect(verifyWebhook(r.raw, String(r.headers['svc-signature']), secret)).toBe(true);
    }
    await t.app.get(WebhooksService).remove(id);
  });

  it('gives an event up when its retries are over, marks the endpoint failing until a delivery succeeds', async () => {
    receiver.received.length = 0;
    receiver.answer = () => ({ status: 500, body: 'broken' });
    const credential = await issueCredential(t, { clients: [1001] });
    const { id } = await t.app.get(WebhooksService).add(credential.clientId, `${receiver.url}/failing`);
    await importVisits(t, [visitRecord(201, 'B-1')]);
    const endpoint = (): Promise<EndpointSummary | undefined> => t.app.get(WebhooksService).list().then((all) => all.find((e) => e.id === id));
    const failing = (await eventually(endpoint, (e) => e?.state === 'failing', 60_000, 50))!;
    expect(failing).toMatchObject({ id, state: 'failing', lastError: 'HTTP 500: broken', pendingEvents: 0, lastDeliveryAt: null });
    expect(Date.parse(failing.failingSince!)).toBeGreaterThan(0);
    expect(receiver.received.length).toBeGreaterThanOrEqual(2);
    expect(new Set(receiver.received.map((r) => r.json.id)).size).toBe(1);
    expect(await t.app.get(MetricsService).registry.metrics()).toMatch(/^results_webhook_deliveries_total\{outcome="given_up"\} 1$/m);
    expect((await request(t.http).get('/health/ready')).status).toBe(200);

    receiver.answer = () => ({ status: 200 });
    await importVisits(t, [visitRecord(202, 'B-1')]);
    const healthy = (await eventually(endpoint, (e) => e?.state === 'active', 60_000, 50))!;
    expect(healthy).toMatchObject({ state: 'active', failingSince: null, pendingEvents: 0 });
    expect(healthy.lastDeliveryAt).not.toBeNull();
  });
});

describe(`webhooks: the endpoint list (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;

  beforeAll(async () => {
    // A window of ten minutes: the dispatcher never claims the test's event, the test does.
    t = await startTestApp({ ...QUICK_WEBHOOKS, WEBHOOKS_COALESCE_MS: String(600_000) });
    await seedWebhookClients(t);
  });
  afterAll(() => t.close());

  it('shows each endpoint with the events waiting for it as of one moment, whatever commits between its two reads', async () => {
    const credential = await issueCredential(t, { clients: [1001] });
    const service = t.app.get(WebhooksService);
    const { id } = await service.add(credential.clientId, 'http://127.0.0.1:9/never-called');
    await importVisits(t, [visitRecord(301, 'B-1')]);
    const repo = t.app.get(WebhooksRepository);
    const inTwoHours = new Date(Date.now() + 7_200_000);
    const [claimed] = await repo.claim({ now: inTwoHours, limit: 1, inFlight: new Map(), perEndpoint: 1, leaseMs: 0, lockToken: 'list-snapshot' });
    expect(claimed).toMatchObject({ endpointId: id, lockToken: 'list-snapshot' });

    // The give-up (the event leaves the outbox, the endpoint turns failing) starts after the
    // list has read the endpoints and before it counts the waiting events; on PostgreSQL it
    // commits in between, on SQLite it waits for the list's transaction.
    const internals = repo as unknown as { pendingCounts(m: EntityManager): Promise<Map<string, number>> };
    const count = internals.pendingCounts.bind(repo);
    let givingUp: Promise<void> = Promise.resolve();
    const between = jest.spyOn(internals, 'pendingCounts').mockImplementationOnce(async (manager) => {
      givingUp = repo.giveUp(claimed, 'HTTP 500: broken', new Date());
      if (process.env.TEST_DATABASE === 'postgres') await givingUp;
      return count(manager);
    });
    const during = await service.list();
    expect(between).toHaveBeenCalledTimes(1);
    between.mockRestore();
    await givingUp;

    expect(during).toEqual([expect.objectContaining({ id, state: 'active', failingSince: null, lastError: null, pendingEvents: 1 })]);
    expect(await service.list()).toEqual([expect.objectContaining({ id, state: 'failing', lastError: 'HTTP 500: broken', pendingEvents: 0 })]);
  });
});

describe('the README', () => {
  it('shows the receiver\'s verification exactly as examples/verify-webhook.ts, which the tests verify every delivery with', () => {
    const readme = readFileSync(new URL('../README.md', import.meta.url), 'utf8');
    const code = readFileSync(new URL('../examples/verify-webhook.ts', import.meta.url), 'utf8');
    expect(readme).toContain(`\`\`\`ts\n${code}\`\`\``);
  });
});
