import { eventually } from '../helpers/eventually.js';
import { issueCredential } from '../helpers/auth.js';
import { restoreSystemClock, setSystemClockOff } from '../helpers/system-clock.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { importVisits } from '../helpers/visits-fixture.js';
import { WebhookReceiver, type Received } from '../helpers/webhook-receiver.js';
import { pendingEvents, QUICK_WEBHOOKS, seedWebhookClients, visitRecord } from '../helpers/webhooks-fixture.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { WebhooksService } from '../../src/webhooks/webhooks.service.js';

/**
 * Webhook due times and leases on PostgreSQL are the database's clock, which replicas and
 * commands share: a replica whose own clock is behind or steps ahead (NTP, a virtual machine
 * resumed) neither leaves events waiting for the gap nor sends an event again while the
 * replica that claimed it is still sending it.
 */
describe('webhook delivery by a replica whose clock is off (postgres)', () => {
  let t: TestApp;
  const receiver = new WebhookReceiver();
  const arrivals = (): Promise<Received[]> => Promise.resolve(receiver.received);
  let credential: string;

  beforeAll(async () => {
    // Leases of 2 x 2 s, polls every 50 ms.
    t = await startTestApp(QUICK_WEBHOOKS);
    await seedWebhookClients(t);
    credential = (await issueCredential(t, { clients: [1001], scopes: ['visits/standard.read'] })).clientId;
    await receiver.start();
  });
  afterAll(async () => {
    restoreSystemClock();
    await t.close();
    await receiver.stop();
  });
  afterEach(async () => {
    restoreSystemClock();
    await eventually(() => pendingEvents(t), (n) => n === 0, 30_000, 50);
    receiver.received.length = 0;
  });

  it('sends an event that is due from a replica whose clock is an hour behind', async () => {
    await t.app.get(WebhooksService).add(credential, `${receiver.url}/behind`);
    setSystemClockOff(-3_600_000);
    await importVisits(t, [visitRecord(1, 'B-1')]);
    const [event] = await eventually(arrivals, (r) => r.length === 1, 30_000, 50);
    expect(event.json.data).toEqual({ svcClientId: 1001, count: 1 });
  });

  it('reports the age of the oldest waiting event by the clock it was dated with, on a replica whose clock is an hour ahead', async () => {
    const { id } = await t.app.get(WebhooksService).add(credential, `${receiver.url}/waiting`);
    // Disabled: its event waits in the outbox.
    await t.app.get(WebhooksService).setDisabled(id, true);
    await importVisits(t, [visitRecord(3, 'B-1')]);
    await eventually(() => pendingEvents(t), (n) => n === 1, 30_000, 50);
    setSystemClockOff(3_600_000);
    const metrics = await t.app.get(MetricsService).registry.metrics();
    restoreSystemClock();
    await t.app.get(WebhooksService).remove(id);
    // Written a moment ago by the database's clock: not an hour old.
    expect(Number(/^results_webhook_outbox_oldest_age_seconds (\S+)$/m.exec(metrics)?.[1])).toBeLessThan(600);
  });

  it('does not send an event again while it is being sent when the clock of the replica that sends it steps a minute ahead', async () => {
    await t.app.get(WebhooksService).add(credential, `${receiver.url}/stepped`);
    // The receiver answers after 1.5 s: well within the 2 s timeout and the 4 s lease.
    receiver.answer = () => ({ status: 200, delayMs: 1500 });
    await importVisits(t, [visitRecord(2, 'B-1')]);
    await eventually(arrivals, (r) => r.some((e) => e.path === '/stepped'), 30_000, 10);
    // Past the lease by this process's clock, while its request is under way.
    setSystemClockOff(60_000);
    await eventually(() => pendingEvents(t), (n) => n === 0, 30_000, 50);
    expect(receiver.received.filter((r) => r.path === '/stepped')).toHaveLength(1);
  });
});
