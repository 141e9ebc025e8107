import { Injectable, type NestMiddleware } from '@nestjs/common';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isResourceRoute, routeTemplateOf } from '../common/allowed-methods.js';
import { pathOf } from '../common/lane.js';
import { whenEnded } from '../common/response-gone.js';
import { MetricsService } from './metrics.service.js';

/** Routes of requests answered before Express routed them (see VisitPagesLane). */
const answeredRoutes = new WeakMap<IncomingMessage, string>();

/** Names the route template of a request answered without Express's router. */
export function answeredByRoute(req: IncomingMessage, route: string): void {
  answeredRoutes.set(req, route);
}

/**
 * The route template of a request, once routing is done: the route that answered it, or whose
 * path it named with another method (a 405), else 'unmatched' (a 404).
 */
export function routeOf(req: IncomingMessage): string {
  // A request no route answered keeps the route of the middleware Nest mounts on every path.
  const routed: unknown = (req as unknown as { route?: unknown }).route;
  if (isResourceRoute(routed) && typeof routed.path === 'string') return routed.path;
  const answered = answeredRoutes.get(req);
  if (answered !== undefined) return answered;
  // The URL as it came: inside a middleware Express mounted on a path (Nest's, this one's), req.url
  // is what is left of it after the mount path, and a request whose connection closed before the
  // router was reached is counted from there.
  const { app, originalUrl } = req as IncomingMessage & { app?: unknown; originalUrl?: string };
  return routeTemplateOf(app, pathOf({ url: originalUrl ?? req.url })) ?? 'unmatched';
}

/**
 * The methods counted by their names: those of HTTP's common use, which routes answer (HEAD with
 * GET) or browsers send (OPTIONS). Any other that Node's parser reads (PROPFIND, MKCALENDAR,
 * M-SEARCH: 34 in all) is `other`: a scanner's sweep of every method over every path made a
 * series of each, and as many of the latency histogram's buckets, for requests that are all
 * 404s and 405s.
 */
const COUNTED_METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);

/** The method label of a request: its method when COUNTED_METHODS has it, else `other`. */
function methodLabel(method: string | undefined): string {
  return method !== undefined && COUNTED_METHODS.has(method) ? method : 'other';
}

/** Requests timed already: one timed before Express (see VisitPagesLane) is not timed twice. */
const timed = new WeakSet<IncomingMessage>();

/**
 * Counts and times every response the client took whole by method, route template and status,
 * and counts apart those whose connection closed before the response was complete (a client's
 * timeout, a client gone, the stall rule): their time is the client's, not the service's.
 */
@Injectable()
export class RequestMetricsMiddleware implements NestMiddleware {
  constructor(private readonly metrics: MetricsService) {}

  use(req: IncomingMessage, res: ServerResponse, next: () => void): void {
    if (timed.has(req)) return next();
    timed.add(req);
    const started = process.hrtime.bigint();
    whenEnded(res, (whole) => {
      const method = methodLabel(req.method);
      const route = routeOf(req);
      if (!whole) {
        this.metrics.aborted.inc({ method, route });
        return;
      }
      const labels = { method, route, status: String(res.statusCode) };
      this.metrics.requests.inc(labels);
      this.metrics.duration.observe(labels, Number(process.hrtime.bigint() - started) / 1e9);
    });
    next();
  }
}
