import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { MetricsService } from './metrics.service.js';

/** The route template of a request, once routing is done ('unmatched' when no route took it). */
export function routeOf(req: Request): string {
  const route: unknown = (req as unknown as { route?: { path?: unknown } }).route?.path;
  return typeof route === 'string' ? route : 'unmatched';
}

/** Counts and times every response by method, route template and status. */
@Injectable()
export class RequestMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: MetricsService) {}

  use(req: Request, res: Response, next: NextFunction): void {
    const started = process.hrtime.bigint();
    res.once('finish', () => {
      const labels = { method: req.method, route: routeOf(req), status: String(res.statusCode) };
      this.metrics.requests.inc(labels);
      this.metrics.duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  }
}
