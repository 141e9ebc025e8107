import { mkdtempSync, rmSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
        msg: 'request aborted: the connection closed before the response was complete',
      }),
    ]);
    expect(service.output()).toContain('grace period over: closing the remaining connections');
  });
});
