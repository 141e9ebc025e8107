import { Injectable } from '@nestjs/common';
import { Counter, Gauge, Histogram } from 'prom-client';
import { MetricsService } from '../metrics/metrics.service.js';
import { WebhooksRepository } from './webhooks.repository.js';

/** How long a scrape waits for the outbox query before it answers with the outbox gauges as they were. */
const OUTBOX_READ_MS = 2000;

export type DeliveryOutcome = 'delivered' | 'failed' | 'given_up';

/**
 * The webhook metrics, in the service's registry. The outbox gauges are read from the
 * database when scraped (one query for both: a scrape collects them together), so every
 * replica reports the whole outbox, which all of them share.
 */
@Injectable()
export class WebhookMetrics {
  readonly deliveries: Counter<'outcome'>;
  readonly duration: Histogram<'outcome'>;
  /** The outbox query of the scrape under way. */
  private stats: Promise<{ depth: number; oldest: Date | null; now: Date } | null> | null = null;

  constructor(metrics: MetricsService, repo: WebhooksRepository) {
    const registers = [metrics.registry];
    this.deliveries = new Counter({
      name: 'results_webhook_deliveries_total',
      help: 'Webhook delivery attempts by outcome: delivered (a 2xx), failed (to be retried), given_up (retries over, endpoint marked failing).',
      labelNames: ['outcome'] as const,
      registers,
    });
    this.duration = new Histogram({
      name: 'results_webhook_delivery_duration_seconds',
      help: 'Time from a webhook request to its answer (or to the error or timeout), by outcome.',
      labelNames: ['outcome'] as const,
      buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers,
    });
    const read = (): Promise<{ depth: number; oldest: Date | null; now: Date } | null> => {
      // A database that cannot answer leaves the gauges as they were: the scrape itself still works.
      this.stats ??= repo
        .outboxStats()
        .catch(() => null)
        .finally(() => (this.stats = null));
      // Within OUTBOX_READ_MS: a query waiting for a connection of a full pool, or on a database
      // that stopped answering, ends only at DATABASE_QUERY_TIMEOUT_MS (10 s), Prometheus's own
      // scrape timeout, and the whole scrape was lost (the pool's gauges with it) when it was
      // wanted most. A later scrape waits for the same query, never a second one.
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<null>((resolve) => (timer = setTimeout(resolve, OUTBOX_READ_MS, null)));
      return Promise.race([this.stats, late]).finally(() => clearTimeout(timer));
    };
    new Gauge({
      name: 'results_webhook_outbox_depth',
      help: 'Webhook events waiting in the outbox (all replicas), in delivery or to be retried included.',
      registers,
      async collect() {
        const stats = await read();
        if (stats) this.set(stats.depth);
      },
    });
    new Gauge({
      name: 'results_webhook_outbox_oldest_age_seconds',
      help: 'Age of the oldest event in the outbox, from its first change; 0 when the outbox is empty.',
      registers,
      async collect() {
        const stats = await read();
        if (stats) this.set(stats.oldest ? Math.max(0, (stats.now.getTime() - stats.oldest.getTime()) / 1000) : 0);
      },
    });
  }

  observe(outcome: DeliveryOutcome, seconds: number): void {
    this.deliveries.inc({ outcome });
    this.duration.observe({ outcome }, seconds);
  }
}
