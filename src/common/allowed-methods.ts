import { METHODS } from 'node:http';
import { NotFoundException } from '@nestjs/common';

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A layer of Express's router (router 2): a route's layer has `route`, and matches a path. */
interface RouterLayer {
  route?: { methods: Record<string, boolean | undefined> };
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
    const answered = Object.entries(layer.route.methods).filter(([method, on]) => on && method !== '_all');
    // A route for every method is a middleware mounted on all paths (Nest's), not a resource.
    if (layer.route.methods._all || answered.length >= METHODS.length || !layer.match(path)) continue;
    for (const [method] of answered) methods.add(method.toUpperCase());
  }
  if (methods.has('GET')) methods.add('HEAD');
  const rank = (method: string): number => (ORDER.includes(method) ? ORDER.indexOf(method) : ORDER.length);
  return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
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
