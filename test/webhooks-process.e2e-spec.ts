import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { verifyWebhook } from '../examples/verify-webhook.js';
import { cliJson } from './helpers/cli.js';
import { eventually } from './helpers/eventually.js';
import { startService, type ServiceProcess } from './helpers/service-process.js';
import { isolatedConfig } from './helpers/test-config.js';
import { WebhookReceiver, type Received } from './helpers/webhook-receiver.js';
import { QUICK_WEBHOOKS, visitRecord } from './helpers/webhooks-fixture.js';

const files = mkdtempSync(join(tmpdir(), 'webhooks-process-'));
function file(name: string, rows: unknown[]): string {
  const path = join(files, name);
  writeFileSync(path, rows.map((r) => JSON.stringify(r)).join('\n'));
  return path;
}

/** The service as it runs in production (`node dist/main.js`), delivering from its outbox. */
describe(`webhooks in the service process (${process.env.TEST_DATABASE})`, () => {
  const { env, drop } = isolatedConfig({ ...QUICK_WEBHOOKS, LOG_LEVEL: 'info' });
  const receiver = new WebhookReceiver();
  const arrivals = (): Promise<Received[]> => Promise.resolve(receiver.received);
  let secret: string;
  let service: ServiceProcess | null = null;

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], env);
    await cliJson(['brands', 'add', '--client', '1001', '--id', '5', '--name', 'Acme Grill'], env);
    writeFileSync(join(files, 'branches.json'), JSON.stringify([{ id: 'B-1', name: 'Leeds', branchCode: null, brandId: 5 }]));
    await cliJson(['branches', 'import', '--client', '1001', join(files, 'branches.json')], env);
    const { clientId } = await cliJson<{ clientId: string }>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'], env);
    await receiver.start();
    ({ secret } = await cliJson<{ secret: string }>(['webhooks', 'add', clientId, '--url', `${receiver.url}/hook`], env));
  });
  afterAll(async () => {
    await service?.stop('SIGKILL');
    await receiver.stop();
    await drop();
  });

  it('delivers in the background, logging each failed attempt with the event id and never the secret', async () => {
    receiver.answer = (_r, i) => (i === 0 ? { status: 503, body: 'busy' } : { status: 200 });
    service = await startService(env);
    await cliJson(['visits', 'import', file('first.ndjson', [visitRecord(1, 'B-1')])], env);
    const [failed, delivered] = await eventually(arrivals, (r) => r.length === 2, 60_000, 50);
    expect(delivered.json.id).toBe(failed.json.id);
    expect(delivered.json.data).toEqual({ svcClientId: 1001, count: 1 });
    expect(verifyWebhook(delivered.raw, String(delivered.headers['svc-signature']), secret)).toBe(true);

    const eventId = failed.json.id;
    await service.waitForOutput((text) => text.includes(eventId));
    const line = service
      .output()
      .split('\n')
      .find((l) => l.includes(eventId));
    expect(JSON.parse(line!)).toMatchObject({
      level: 40,
      msg: 'webhook delivery failed; will retry',
      eventId,
      endpointId: expect.stringMatching(/^wh_/),
      attempt: 1,
      status: 503,
      error: 'HTTP 503: busy',
      retryAt: expect.any(String),
    });
    expect(service.output()).not.toContain(secret.slice('whsec_'.length));
  });

  it('stops cleanly with a delivery in flight, and the next start delivers the event: a restart loses nothing', async () => {
    receiver.received.length = 0;
    receiver.answer = (_r, i) => (i === 0 ? 'hang' : { status: 200 });
    await cliJson(['visits', 'import', file('second.ndjson', [visitRecord(2, 'B-1')])], env);
    const [held] = await eventually(arrivals, (r) => r.length === 1, 60_000, 50);
    expect(await service!.stop('SIGTERM')).toBe(0);
    expect(receiver.received).toHaveLength(1);

    service = await startService(env);
    const [, again] = await eventually(arrivals, (r) => r.length === 2, 60_000, 50);
    expect(again.json).toEqual(held.json);
    expect(verifyWebhook(again.raw, String(again.headers['svc-signature']), secret)).toBe(true);
    const [listed] = await eventually(
      () => cliJson<{ pendingEvents: number; lastDeliveryAt: string | null }[]>(['webhooks', 'list'], env),
      ([e]) => e?.pendingEvents === 0,
      30_000,
      100,
    );
    expect(listed).toMatchObject({ pendingEvents: 0, lastDeliveryAt: expect.any(String) });
  });

  it('waits at SIGTERM, whatever the grace, for a delivery in flight to be answered, and records it: the next start does not send it again', async () => {
    await service?.stop('SIGTERM');
    // The answer comes after the least time closing has (5 s), within the delivery's timeout.
    service = await startService({ ...env, SHUTDOWN_GRACE_SECONDS: '0', WEBHOOKS_TIMEOUT_MS: '9000' });
    receiver.received.length = 0;
    receiver.answer = () => ({ status: 200, delayMs: 6500 });
    await cliJson(['visits', 'import', file('third.ndjson', [visitRecord(3, 'B-1')])], env);
    await eventually(arrivals, (r) => r.length === 1, 60_000, 50);
    expect(await service.stop('SIGTERM')).toBe(0);
    service = null;
    const listed = await cliJson<{ pendingEvents: number }[]>(['webhooks', 'list'], env);
    expect(listed).toEqual([expect.objectContaining({ pendingEvents: 0 })]);
  }, 60_000);
});
