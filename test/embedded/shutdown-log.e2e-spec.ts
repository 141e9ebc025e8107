import { mkdtempSync, rmSync } from 'node:fs';
import { spawn } from 'node:child_process';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../helpers/eventually.js';
import { freePort } from '../helpers/listen.js';
import { startService } from '../helpers/service-process.js';

/**
 * A request still under way when the shutdown grace ends is cut off with its connection, and
 * still has its log line (`aborted`), as every request does: the process used to exit before
 * the closed connections ended their requests.
 */
describe('a request cut off at the end of the shutdown grace', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shutdown-log-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is logged as aborted before the process exits 0', async () => {
    const service = await startService({ DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'info', SHUTDOWN_GRACE_SECONDS: '1', METRICS_PORT: '0' });
    const { port } = new URL(service.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    // A token request whose body never comes: the 100 Continue says the service is reading it.
    const continued = new Promise<void>((resolve) => socket.once('data', (chunk: Buffer) => chunk.toString('latin1').startsWith('HTTP/1.1 100 Continue') && resolve()));
    socket.write(
      'POST /connect/token HTTP/1.1\r\nHost: x\r\nX-Request-Id: cut-at-shutdown\r\nContent-Type: application/x-www-form-urlencoded\r\n' +
        'Content-Length: 100\r\nExpect: 100-continue\r\n\r\n',
    );
    await continued;
    expect(await service.stop('SIGTERM')).toBe(0);
    socket.destroy();
    const lines = service
      .output()
      .split('\n')
      .filter((line) => line.includes('"cut-at-shutdown"'))
      .map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines).toEqual([
      expect.objectContaining({
        level: 40,
        aborted: true,
        req: expect.objectContaining({ id: 'cut-at-shutdown', method: 'POST', url: '/connect/token' }),
        // No answer was begun (100 Continue is no status of the request's): none is claimed.
        res: { statusCode: null },
        msg: 'request aborted: the connection closed before the response was complete',
      }),
    ]);
    expect(service.output()).toContain('grace period over: closing the remaining connections');
    // Its last line says it stopped as asked, and when.
    const jsonLines = service
      .output()
      .split('\n')
      .filter((line) => line.startsWith('{'));
    const last = JSON.parse(jsonLines[jsonLines.length - 1]) as Record<string, unknown>;
    expect(last).toEqual(expect.objectContaining({ level: 30, context: 'Shutdown', msg: expect.stringMatching(/^stopped \d+\.\d s after SIGTERM$/) as unknown }));
  });
});

/**
 * A connection opened and never spoken on (a proxy's, opened ahead of need) carries no request:
 * the shutdown closes it at once instead of waiting the whole grace period for it.
 */
describe('a connection that has not sent a byte, or only part of a head, at shutdown', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shutdown-silent-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is closed at once, and the process exits 0 without waiting out the grace', async () => {
    // A grace longer than the test's own timeout: waiting it out fails the test.
    const service = await startService({ DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'info', SHUTDOWN_GRACE_SECONDS: '600', METRICS_PORT: '0' });
    const { port } = new URL(service.url);
    const silent = connect(Number(port), '127.0.0.1');
    silent.on('error', () => undefined);
    await new Promise<void>((resolve) => silent.once('connect', () => resolve()));
    const closed = new Promise<string>((resolve) => silent.once('close', () => resolve('closed')));
    const received: Buffer[] = [];
    silent.on('data', (chunk: Buffer) => received.push(chunk));
    // Nor does one that has sent part of a request's head, which Node counts busy too.
    const halfHead = connect(Number(port), '127.0.0.1', () => halfHead.write('GET /health/live HTTP/1.1\r\nHost: x\r\n'));
    halfHead.on('error', () => undefined);
    const halfClosed = new Promise<string>((resolve) => halfHead.once('close', () => resolve('closed')));
    // A kept-alive connection with a request answered is idle too, and closes as before.
    const spoken = connect(Number(port), '127.0.0.1');
    spoken.on('error', () => undefined);
    const answered = new Promise<string>((resolve) => spoken.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1').split('\r\n')[0])));
    spoken.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await answered).toBe('HTTP/1.1 200 OK');
    expect(await service.stop('SIGTERM')).toBe(0);
    expect(await closed).toBe('closed');
    expect(await halfClosed).toBe('closed');
    expect(Buffer.concat(received).length).toBe(0);
    expect(service.output()).toContain('SIGTERM: draining for up to 600 s');
    expect(service.output()).not.toContain('grace period over');
  }, 60_000);
});

/**
 * A connection the service accepts while its start is still under way (the metrics server's
 * host name being looked up, after the API's port listens) is one the shutdown knows: it closes
 * at once as any silent one, where it was missed and held the exit for the whole grace period.
 */
describe('a connection accepted while the start is still under way', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shutdown-early-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  /**
   * Clients in a process of their own (quick to try again, as a proxy is): they connect again and
   * again until the port listens, keep every connection they get for 200 ms more, say how many
   * they hold, and then each one that closes.
   */
  const CLIENTS = `
    const net = require('node:net');
    const port = Number(process.argv[1]);
    let held = 0;
    let until = 0;
    const attempt = () => {
      if (until && Date.now() > until) return;
      const socket = net.connect(port, '127.0.0.1');
      socket.on('error', () => undefined);
      socket.once('close', (failed) => (failed && !socket.held ? setTimeout(attempt, 1) : process.stdout.write('closed\\n')));
      socket.once('connect', () => {
        socket.held = true;
        held++;
        if (!until) {
          until = Date.now() + 200;
          setTimeout(() => process.stdout.write('held ' + held + '\\n'), 250);
        }
        setTimeout(attempt, 1);
      });
    };
    for (let i = 0; i < 4; i++) attempt();
  `;

  it('is closed at shutdown, and the process exits 0 without waiting out the grace', async () => {
    const [port, metricsPort] = [await freePort(), await freePort()];
    const clients = spawn(process.execPath, ['-e', CLIENTS, String(port)]);
    let said = '';
    clients.stdout.on('data', (chunk: Buffer) => (said += chunk.toString()));
    try {
      // A grace longer than the test's own timeout: waiting it out fails the test. A host name,
      // which the metrics server looks up after the API's port listens: the start awaits it.
      const service = await startService({
        DATA_DIR: dataDir,
        SEED_DEMO: 'false',
        LOG_LEVEL: 'info',
        SHUTDOWN_GRACE_SECONDS: '600',
        PORT: String(port),
        HOST: 'localhost',
        METRICS_PORT: String(metricsPort),
      });
      const held = Number((await eventually(() => Promise.resolve(/held (\d+)/.exec(said)), (m) => m !== null, 10_000, 20))![1]);
      expect(held).toBeGreaterThan(0);
      expect(await service.stop('SIGTERM')).toBe(0);
      await eventually(() => Promise.resolve(said.split('closed').length - 1), (closed) => closed === held, 10_000, 20);
      expect(service.output()).not.toContain('grace period over');
    } finally {
      clients.kill();
    }
  }, 60_000);
});

/**
 * A request under way at SIGTERM (an upload whose body is still coming) is answered in full,
 * with Connection: close, and its connection ends then: a partner's kept-alive connection does
 * not hold the shutdown for the whole grace period.
 */
describe('a request under way at shutdown', () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'shutdown-underway-'));
  afterAll(() => rmSync(dataDir, { recursive: true, force: true }));

  it('is answered with Connection: close, and the process exits 0 without waiting out the grace', async () => {
    // A grace longer than the test's own timeout: waiting it out fails the test.
    const service = await startService({ DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'info', SHUTDOWN_GRACE_SECONDS: '600', METRICS_PORT: '0' });
    const { port } = new URL(service.url);
    const socket = connect(Number(port), '127.0.0.1');
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
    const form = 'grant_type=client_credentials&client_id=svc_x&client_secret=y';
    socket.write(`POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n${form.slice(0, 10)}`);
    // The body's first bytes are in: the request is under way when SIGTERM comes.
    await new Promise((resolve) => setTimeout(resolve, 300));
    const exited = service.stop('SIGTERM');
    await service.waitForOutput(/SIGTERM: draining for up to 600 s/);
    socket.write(form.slice(10));
    await closed;
    const head = received.split('\r\n\r\n')[0].split('\r\n');
    // Answered in full, as before SIGTERM: a token request without an API key is a 401 in OAuth's form.
    expect(head[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(head).toContain('Connection: close');
    expect(JSON.parse(received.split('\r\n\r\n')[1])).toMatchObject({ error: 'invalid_client' });
    expect(await exited).toBe(0);
    expect(service.output()).not.toContain('grace period over');
  }, 60_000);
});
