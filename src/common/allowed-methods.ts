import { METHODS } from 'node:http';
import { NotFoundException } from '@nestjs/common';

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A layer of Express's router (router 2): a route's layer has `route`, and matches a path. */
interface RouterLayer {
  route?: { methods: Record<string, boolean | undefined>; path?: unknown };
  match(path: string): boolean;
}

/**
 * The methods the app's routes answer at `path` (HEAD with GET, as Express answers it), in a
 * fixed order; empty when no route has the path. `app` is the request's Express app
 * (`req.app`), whose router lists the routes Nest registered.
 *
 * Layer.match sets the layer's own `params` and `path`, as Express's router does while it
 * routes; it runs synchronously here, as there, so no request's routing is in between.
 */
export function allowedMethods(app: unknown, path: string): string[] {
  const stack = (app as { router?: { stack?: RouterLayer[] } } | undefined)?.router?.stack ?? [];
  const methods = new Set<string>();
  for (const layer of stack) {
    if (layer.route === undefined) continue;
    const answered = answeredMethods(layer.route);
    if (answered === null || !layer.match(path)) continue;
    for (const method of answered) methods.add(method);
  }
  if (methods.has('GET')) methods.add('HEAD');
  const rank = (method: string): number => (ORDER.includes(method) ? ORDER.indexOf(method) : ORDER.length);
  return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * The template of the route that has `path` (for some method), or undefined: what a request
 * to that path with a method the route does not answer (a 405) is counted under.
 */
export function routeTemplateOf(app: unknown, path: string): string | undefined {
  const stack = (app as { router?: { stack?: RouterLayer[] } } | undefined)?.router?.stack ?? [];
  for (const layer of stack) {
    if (layer.route === undefined || answeredMethods(layer.route) === null) continue;
    if (typeof layer.route.path === 'string' && layer.match(path)) return layer.route.path;
  }
  return undefined;
}

/** The methods a route answers, upper-case; null for a route of every method, which is a middleware mounted on all paths (Nest's), not a resource. */
function answeredMethods(route: NonNullable<RouterLayer['route']>): string[] | null {
  const answered = Object.entries(route.methods).filter(([method, on]) => on && method !== '_all');
  return route.methods._all || answered.length >= METHODS.length ? null : answered.map(([method]) => method.toUpperCase());
}

/**
 * Nest's answer to a request no route took (`Cannot POST /visits/standard`): when a route
 * has the path with another method, the methods it has, so the answer is a 405 with `Allow`
 * (RFC 9110 §15.5.6) rather than a 404 that says the resource does not exist.
 */
export function methodsOfUnroutedPath(exception: unknown, request: { method: string; path: string; app?: unknown }): string[] {
  // A method's name may hold a hyphen (M-SEARCH).
  if (!(exception instanceof NotFoundException) || !/^Cannot [A-Z-]+ /.test(exception.message)) return [];
  const methods = allowedMethods(request.app, request.path);
  return methods.includes(request.method) ? [] : methods;
}
