import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';
import { DataSource } from 'typeorm';

interface PgPool {
  totalCount: number;
  idleCount: number;
  waitingCount: number;
}

/**
 * The service's Prometheus metrics, in a registry of its own (so several applications in
 * one process, as in tests, never share counters). Served on METRICS_PORT.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();

  readonly requests = new Counter({
    name: 'results_http_requests_total',
    help: 'HTTP requests answered (the response taken whole), by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    registers: [this.registry],
  });

  readonly duration = new Histogram({
    name: 'results_http_request_duration_seconds',
    help: 'Time from request to the end of the response, by method, route template and status.',
    labelNames: ['method', 'route', 'status'] as const,
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [this.registry],
  });

  readonly aborted = new Counter({
    name: 'results_http_requests_aborted_total',
    help: 'HTTP requests whose connection closed before the response was complete (the client gone or timed out, a stalled connection closed, a body the parser refused while it was read), by method and route template.',
    labelNames: ['method', 'route'] as const,
    registers: [this.registry],
  });

  readonly refused = new Counter({
    name: 'results_http_refused_total',
    help: 'Requests answered before the application, by status: malformed HTTP (400), a request too slow (408), a target or headers too large (414, 431), an Expect not met (417), an unknown method, transfer coding or CONNECT (501), an HTTP version not spoken (505).',
    labelNames: ['status'] as const,
    registers: [this.registry],
  });

  readonly tokensIssued = new Counter({
    name: 'results_tokens_issued_total',
    help: 'Access tokens issued by POST /connect/token.',
    registers: [this.registry],
  });

  readonly tokenFailures = new Counter({
    name: 'results_token_failures_total',
    help: 'Refused token requests, by OAuth error code.',
    labelNames: ['error'] as const,
    registers: [this.registry],
  });

  readonly rateLimited = new Counter({
    name: 'results_rate_limited_total',
    help: 'Requests refused with 429, by limit (default: per API key; token: per client id).',
    labelNames: ['limit'] as const,
    registers: [this.registry],
  });

  readonly rateLimitStoreFallbacks = new Counter({
    name: 'results_rate_limit_store_fallbacks_total',
    help: 'Rate-limit checks counted in the process because Redis could not be reached.',
    registers: [this.registry],
  });

  readonly tokenFailureStoreFallbacks = new Counter({
    name: 'results_token_failure_store_fallbacks_total',
    help: 'Failed-token-request checks and counts done in the process because Redis could not be reached.',
    registers: [this.registry],
  });

  readonly idleCollections = new Counter({
    name: 'results_idle_collections_total',
    help: 'Full garbage collections run because the process went quiet holding dead buffers (IDLE_GC_SECONDS).',
    registers: [this.registry],
  });

  constructor(@InjectDataSource() db: DataSource) {
    // prom-client's names begin with process_ or nodejs_ already: results_process_cpu_seconds_total, results_nodejs_heap_size_used_bytes.
    collectDefaultMetrics({ register: this.registry, prefix: 'results_' });
    const pool = (): PgPool | undefined =>
      db.isInitialized && db.options.type === 'postgres' ? (db.driver as unknown as { master?: PgPool }).master : undefined;
    for (const [name, help, read] of [
      ['results_db_pool_connections', 'Database pool connections open.', (p: PgPool) => p.totalCount],
      ['results_db_pool_idle_connections', 'Database pool connections idle.', (p: PgPool) => p.idleCount],
      ['results_db_pool_waiting_requests', 'Queries waiting for a database connection.', (p: PgPool) => p.waitingCount],
    ] as const) {
      new Gauge({
        name,
        help,
        registers: [this.registry],
        collect() {
          const p = pool();
          this.set(p ? read(p) : 0);
        },
      });
    }
  }
}
