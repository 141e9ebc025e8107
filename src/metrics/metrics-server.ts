import { createServer, type Server, type ServerResponse } from 'node:http';
import type { MetricsService } from './metrics.service.js';

/** The headers of every answer of the listener: nothing of it is kept by a cache on the way. */
const PLAIN = { 'Content-Type': 'text/plain; charset=utf-8', 'Cache-Control': 'no-store' };

function answer(res: ServerResponse, status: number, text: string, headers: Record<string, string> = {}): void {
  res.writeHead(status, { ...PLAIN, ...headers }).end(text);
}

/**
 * Prometheus text on a port of its own: scraped inside the cluster, never exposed through
 * the public ingress, so it needs no credentials. One resource, `/metrics`: GET and HEAD
 * (RFC 9110 §9.1: a HEAD is answered as its GET, without the body), any other method a 405
 * naming them, any other path a 404.
 */
export async function startMetricsServer(metrics: MetricsService, port: number, host: string): Promise<Server> {
  const server = createServer((req, res) => {
    if ((req.url ?? '').split('?')[0] !== '/metrics') {
      answer(res, 404, 'Not found: the metrics are at /metrics\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      answer(res, 405, 'Method not allowed: GET or HEAD\n', { Allow: 'GET, HEAD' });
      return;
    }
    metrics.registry.metrics().then(
      // Node leaves a HEAD's body out, and keeps the Content-Length its GET would have.
      (text) => res.writeHead(200, { 'Content-Type': metrics.registry.contentType, 'Cache-Control': 'no-store', 'Content-Length': Buffer.byteLength(text) }).end(text),
      () => answer(res, 500, 'metrics failed\n'),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  return server;
}
