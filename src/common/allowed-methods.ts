import { METHODS, type ServerResponse } from 'node:http';
import { NotFoundException } from '@nestjs/common';

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** A route of Express's router (router 2): the methods it answers, and its path template. */
interface Route {
  methods: Record<string, boolean | undefined>;
  path?: unknown;
}

/** A layer of Express's router: a route's layer has `route`, and matches a path. */
interface RouterLayer {
  route?: Route;
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
  return methodsOf(resourceRoutesAt(app, path));
}

/** The methods the routes answer (HEAD with GET), in the fixed order: ORDER first, any other after them by name. */
function methodsOf(routes: Iterable<Route>): string[] {
  const methods = new Set<string>();
  for (const route of routes) for (const method of answeredMethods(route) ?? []) methods.add(method);
  if (methods.has('GET')) methods.add('HEAD');
  const rank = (method: string): number => (ORDER.includes(method) ? ORDER.indexOf(method) : ORDER.length);
  return [...methods].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/**
 * The template of the route that has `path` (for some method), or undefined: what a request
 * to that path with a method the route does not answer (a 405) is counted under.
 */
export function routeTemplateOf(app: unknown, path: string): string | undefined {
  for (const route of resourceRoutesAt(app, path)) if (typeof route.path === 'string') return route.path;
  return undefined;
}

/** Whether a route (a request's `req.route`) is a resource of the API rather than a middleware Nest mounts on every path. */
export function isResourceRoute(route: unknown): route is Route {
  return typeof route === 'object' && route !== null && 'methods' in route && answeredMethods(route as Route) !== null;
}

/** The resource routes (see isResourceRoute) of the app's router that match `path` (all of them without one), in the router's order. */
function* resourceRoutesAt(app: unknown, path?: string): Generator<Route> {
  const stack = (app as { router?: { stack?: RouterLayer[] } } | undefined)?.router?.stack ?? [];
  for (const layer of stack) {
    if (layer.route !== undefined && answeredMethods(layer.route) !== null && (path === undefined || layer.match(path))) yield layer.route;
  }
}

/** The methods a route answers, upper-case; null for a route of every method, which is a middleware mounted on all paths (Nest's), not a resource. */
function answeredMethods(route: Route): string[] | null {
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

/** The methods some route of the app answers (HEAD with GET), in the fixed order: what the server as a whole implements. */
export function serverMethods(app: unknown): string[] {
  return methodsOf(resourceRoutesAt(app));
}

/**
 * `OPTIONS *` asks what the server as a whole offers (RFC 9110 §9.3.7): a 200 with no content
 * and `Allow` naming the methods of the server's routes. Run after the request line and security
 * headers are set; every other request goes on.
 */
export function answerServerOptions(req: { method: string; url: string; app?: unknown }, res: ServerResponse, next: () => void): void {
  if (req.method !== 'OPTIONS' || req.url !== '*') return next();
  res.writeHead(200, { Allow: serverMethods(req.app).join(', '), 'Content-Length': '0', 'Cache-Control': 'no-store' });
  res.end();
}
