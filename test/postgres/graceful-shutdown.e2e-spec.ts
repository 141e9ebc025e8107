import { connect } from 'node:net';
import { cliJson } from '../helpers/cli.js';
import { freePort } from '../helpers/listen.js';
import { startService, type ServiceProcess } from '../helpers/service-process.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { isolatedConfig } from '../helpers/test-config.js';

const PG = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');

/** A rolling update sends SIGTERM while a partner's request is still being answered. */
describe('graceful shutdown (postgres, a slow database through a TCP proxy)', () => {
  const { env, drop } = isolatedConfig();
  let proxy: TcpProxy;
  let service: ServiceProcess;
  let credential: { clientId: string; clientSecret: string; apiKey: string };

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], env);
    credential = await cliJson(['credentials', 'add', '--clients', '1001', '--scopes', 'branches/standard.read'], env);
    proxy = new TcpProxy({ host: PG.hostname, port: Number(PG.port || 5432) }, await freePort());
    await proxy.start();
    const viaProxy = new URL(PG.toString());
    viaProxy.port = String(proxy.port);
    service = await startService({ ...env, DATABASE_URL: viaProxy.toString(), MIGRATIONS_RUN: 'false', SHUTDOWN_GRACE_SECONDS: '20', LOG_LEVEL: 'info' });
  });
  afterAll(async () => {
    await service.stop('SIGKILL');
    await proxy.stop();
    await drop();
  });

  it('finishes the request in flight, refuses new connections, and exits 0', async () => {
    const form = new URLSearchParams({ grant_type: 'client_credentials', client_id: credential.clientId, client_secret: credential.clientSecret });
    const tokenRes = await fetch(`${service.url}/connect/token`, {
      method: 'POST',
      headers: { 'svc-api-key': credential.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
      body: form,
    });
    const { access_token: token } = (await tokenRes.json()) as { access_token: string };
    const call = () => fetch(`${service.url}/branches?SvcClientId=1001`, { headers: { 'svc-api-key': credential.apiKey, authorization: `Bearer ${token}` } });
    expect((await call()).status).toBe(200);

    // Every answer of the database now takes two seconds.
    proxy.delayMs = 2000;
    const started = Date.now();
    const held = proxy.answerHeldBack();
    const slow = call();
    // The request is being answered (its query waits on the database) when SIGTERM arrives.
    await held;
    // A partner's kept-alive connection, idle no more: its first request is in flight too.
    const port = Number(new URL(service.url).port);
    const kept = connect(port, '127.0.0.1');
    let received = '';
    kept.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const keptClosed = new Promise<void>((resolve) => kept.on('close', () => resolve()));
    const request = `GET /branches?SvcClientId=1001 HTTP/1.1\r\nHost: x\r\nsvc-api-key: ${credential.apiKey}\r\nAuthorization: Bearer ${token}\r\n\r\n`;
    kept.write(request);
    await new Promise((resolve) => setTimeout(resolve, 200));
    const exited = service.stop('SIGTERM');
    // The service stops listening in the same step as it logs this.
    await service.waitForOutput(/SIGTERM: draining for up to 20 s/);

    // A new connection is refused (fetch's own kept-alive one would still be answered, with Connection: close).
    const opened = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1');
      socket.on('connect', () => {
        socket.destroy();
        resolve('connected');
      });
      socket.on('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? 'error'));
    });
    expect(opened).toBe('ECONNREFUSED');
    // The request under way on the kept-alive connection is answered with Connection: close,
    // and the connection then ends, long before the grace period's 20 s: the partner's next
    // request goes to another replica.
    await keptClosed;
    const answers = received.split('HTTP/1.1 ').slice(1);
    expect(answers.map((a) => a.slice(0, 3))).toEqual(['200']);
    expect(answers[0]).toMatch(/\r\nConnection: close\r\n/i);
    const res = await slow;
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual([]);
    expect(Date.now() - started).toBeGreaterThanOrEqual(2000);
    expect(await exited).toBe(0);
    expect(service.output()).toMatch(/SIGTERM: draining for up to 20 s/);
  });
});

/**
 * A database that stops answering during a rolling update: closing the application waits for
 * its queries (the webhook poller's), which would hold the process for DATABASE_QUERY_TIMEOUT_MS,
 * past the orchestrator's kill. It exits once the grace period is over (and CLOSE_MIN_MS).
 */
describe('shutdown while the database does not answer (postgres, through a TCP proxy)', () => {
  const { env, drop } = isolatedConfig();
  let proxy: TcpProxy;
  let service: ServiceProcess;

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    proxy = new TcpProxy({ host: PG.hostname, port: Number(PG.port || 5432) }, await freePort());
    await proxy.start();
    const viaProxy = new URL(PG.toString());
    viaProxy.port = String(proxy.port);
    service = await startService({
      ...env,
      DATABASE_URL: viaProxy.toString(),
      // The listening connection straight to the server: the answer the test holds back is then
      // always one of the pool's queries (the poller's), which closing the application waits
      // for, never the listener's periodic check, which it does not wait for.
      DATABASE_DIRECT_URL: PG.toString(),
      MIGRATIONS_RUN: 'false',
      SHUTDOWN_GRACE_SECONDS: '1',
      DATABASE_QUERY_TIMEOUT_MS: '90000',
      WEBHOOKS_POLL_MS: '50',
      LOG_LEVEL: 'info',
    });
  });
  afterAll(async () => {
    await service.stop('SIGKILL');
    await proxy.stop();
    await drop();
  });

  it('exits 0 without waiting for the query, saying so', async () => {
    // Every answer of the database now comes after the test's end: the poller's next query hangs.
    // Its answer, not a new connection's startup: that ends at the connect timeout (5 s), and
    // closing the application would then finish with it, no longer waiting for anything.
    proxy.delayMs = 600_000;
    await proxy.answerHeldBack({ queries: true });
    const started = Date.now();
    const code = await service.stop('SIGTERM');
    expect(code).toBe(0);
    expect(service.output()).toMatch(/the application did not close within 5 s of SIGTERM: exiting without waiting for it/);
    // Long before the query's own timeout (90 s) would have let the application close.
    expect(Date.now() - started).toBeLessThan(60_000);
  });
});
