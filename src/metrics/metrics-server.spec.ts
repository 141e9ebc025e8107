import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Counter, Registry } from 'prom-client';
import { startMetricsServer } from './metrics-server.js';
import type { MetricsService } from './metrics.service.js';

describe('the metrics listener', () => {
  let server: Server;
  let base: string;
  beforeAll(async () => {
    // The listener's part of the service: its registry (the service's own metrics read the database).
    const registry = new Registry();
    new Counter({ name: 'listener_test_total', help: 'A counter of the test.', registers: [registry] }).inc(3);
    server = await startMetricsServer({ registry } as MetricsService, 0, '127.0.0.1');
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('answers GET /metrics with the Prometheus text, and HEAD with its headers and no body', async () => {
    const get = await fetch(`${base}/metrics`);
    const text = await get.text();
    expect([get.status, get.headers.get('content-type'), get.headers.get('cache-control')]).toEqual([200, 'text/plain; version=0.0.4; charset=utf-8', 'no-store']);
    expect(text).toContain('listener_test_total 3');
    const head = await fetch(`${base}/metrics?x=1`, { method: 'HEAD' });
    expect([head.status, head.headers.get('content-type'), Number(head.headers.get('content-length')), await head.text()]).toEqual([200, get.headers.get('content-type'), Buffer.byteLength(text), '']);
  });

  it('answers another method with a 405 naming GET and HEAD, and another path with a 404', async () => {
    for (const method of ['POST', 'PUT', 'DELETE', 'OPTIONS']) {
      const res = await fetch(`${base}/metrics`, { method });
      expect([method, res.status, res.headers.get('allow'), res.headers.get('content-type'), res.headers.get('cache-control')]).toEqual([method, 405, 'GET, HEAD', 'text/plain; charset=utf-8', 'no-store']);
    }
    for (const path of ['/', '/metrics/x', '/Metrics']) {
      const res = await fetch(`${base}${path}`);
      expect([path, res.status, res.headers.get('content-type'), await res.text()]).toEqual([path, 404, 'text/plain; charset=utf-8', 'Not found: the metrics are at /metrics\n']);
    }
  });
});
