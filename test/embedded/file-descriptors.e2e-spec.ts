import { execFileSync } from 'node:child_process';
import { mkdtempSync, readdirSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { eventually } from '../helpers/eventually.js';
import { startService } from '../helpers/service-process.js';

const descriptors = (pid: number): number => readdirSync(`/proc/${pid}/fd`).length;

/**
 * A flood of connections that takes every file descriptor the process may have (its nofile
 * limit, lowered here with prlimit on the running process): the process reads its memory
 * figures from /proc every IDLE_GC_SECONDS, which cannot be opened then, and the error, thrown
 * in a timer, stopped it (exit 1, no log line; under Kubernetes a restart loop while a flood
 * lasts). It serves on, and answers again once the connections close.
 */
describe('the service with every file descriptor taken', () => {
  it('stays up through a flood of connections past its descriptor limit, and answers once they close', async () => {
    const service = await startService({ DATA_DIR: mkdtempSync(join(tmpdir(), 'results-fds-')), SEED_DEMO: 'false', IDLE_GC_SECONDS: '1' });
    const pid = service.child.pid!;
    const limit = descriptors(pid) + 20;
    execFileSync('prlimit', ['--pid', String(pid), `--nofile=${limit}:${limit}`]);
    const { hostname, port } = new URL(service.url);
    const sockets: Socket[] = [];
    try {
      for (let i = 0; i < 60; i++) {
        const socket = connect(Number(port), hostname, () => socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n'));
        socket.on('error', () => undefined);
        sockets.push(socket);
      }
      // Every descriptor taken (a few go to what the process opens meanwhile) ...
      const held = await eventually(
        () => Promise.resolve(descriptors(pid)),
        (count) => count >= limit - 2,
      );
      expect(held).toBeGreaterThanOrEqual(limit - 2);
      // ... for several of the checks, one a second: each met EMFILE.
      await new Promise((resolve) => setTimeout(resolve, 3500));
      expect([service.child.exitCode, service.child.signalCode]).toEqual([null, null]);
    } finally {
      for (const socket of sockets) socket.destroy();
    }
    const live = await eventually(
      () => fetch(`${service.url}/health/live`).then((res) => res.status, () => 0),
      (status) => status === 200,
    );
    expect(live).toBe(200);
    expect((await fetch(`${service.url}/health/ready`)).status).toBe(200);
    expect(service.output()).not.toMatch(/EMFILE|uncaught|failed/i);
    expect(await service.stop()).toBe(0);
  }, 120_000);
});
