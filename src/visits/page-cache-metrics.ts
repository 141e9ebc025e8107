import { Injectable } from '@nestjs/common';
import { Gauge } from 'prom-client';
import { BodyPool } from '../common/body-pool.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { CompressedPages } from './compressed-pages.js';
import { VisitsService } from './visits.service.js';

/**
 * The memory the page cache holds, by form (`plain` pages and their `compressed` codings),
 * read when scraped: most of what a replica's memory holds above its start-up figure after a
 * busy hour, within VISITS_CACHE_MB and a quarter of it. Beside it, the page body buffers kept
 * for re-use (see BodyPool).
 */
@Injectable()
export class PageCacheMetrics {
  constructor(metrics: MetricsService, pages: VisitsService, compressed: CompressedPages, pool: BodyPool) {
    new Gauge({
      name: 'results_visit_page_cache_bytes',
      help: 'Bytes of rendered visit pages kept in this replica, by form: plain, or compressed (br and gzip).',
      labelNames: ['form'] as const,
      registers: [metrics.registry],
      collect() {
        this.set({ form: 'plain' }, pages.cachedBytes);
        this.set({ form: 'compressed' }, compressed.bytes);
      },
    });
    new Gauge({
      name: 'results_page_body_pool_bytes',
      help: 'Bytes of page body buffers this replica keeps to write pages into again; let go when the process goes quiet.',
      registers: [metrics.registry],
      collect() {
        this.set(pool.freeBytes);
      },
    });
  }
}
