import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { InjectThrottlerStorage, type ThrottlerStorage } from '@nestjs/throttler';
import { AuthCacheService } from '../auth/auth-cache.service.js';
import { entitledQuery, selectionOf } from '../auth/entitled-query.js';
import { keyHolderOf } from '../auth/guards/api-key.guard.js';
import { bearerCredentials } from '../auth/guards/bearer-token.js';
import { JwtStrategy } from '../auth/guards/jwt.strategy.js';
import type { Principal } from '../auth/principal.js';
import { REQUIRED_SCOPE } from '../auth/requires-scope.decorator.js';
import { VerifiedTokens } from '../auth/verified-tokens.js';
import { nothing, pathOf, putAhead, setAnswerHeaders, type LaneSetup } from '../common/lane.js';
import { rawQueryString } from '../common/query-params.js';
import { AppConfig } from '../config/app-config.js';
import { REQUEST_LOGGER, type RequestLogger } from '../logging/logging.module.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { answeredByRoute, RequestMetricsMiddleware } from '../metrics/request-metrics.middleware.js';
import { apiLimit, countAhead, handOnCount, setLimitHeaders, type NamedLimit } from '../rate-limit/rate-limit.guard.js';
import type { CountResult } from '../rate-limit/rate-limit.storage.js';
import { CompressedPages } from './compressed-pages.js';
import { VisitsQueryDto } from './dto/visits-query.dto.js';
import { sendVisitsPage } from './page-response.js';
import { PagesInFlight } from './pages-in-flight.js';
import { VisitsController } from './visits.controller.js';
import { VisitsService, type VisitsVariant } from './visits.service.js';

interface LaneRoute {
  path: string;
  variant: VisitsVariant;
  /** The scope the route's handler declares with @RequiresScope. */
  scope: string;
}

/**
 * The visit pages, answered before Express and Nest see the request, when everything about
 * it was checked before: a partner paging or polling sends the same API key and token again
 * and again. Express's router and Nest's pipeline cost a cached Take=100 page about as much
 * CPU as the rest of the request (docs/decisions.md, "The visit pages lane").
 *
 * The lane answers only a GET of /visits/standard or /visits/plus whose API key is valid,
 * whose bearer token was verified by an earlier request (VerifiedTokens), whose token
 * carries the route's scope, whose query is valid and entitled, and that is within the rate
 * limit. It runs the same checks as the guards and the query decorator, the same limit count,
 * and writes the page with the same code as the controller, the request line, metrics and
 * security headers included. Any other request, and any request for which a check fails or
 * the page cannot be read, goes to Express untouched, which answers it in full, refusals and
 * problems included; a request already counted under the rate limit is not counted again.
 */
@Injectable()
export class VisitPagesLane {
  private readonly routes = new Map<string, LaneRoute>();
  private readonly limit: NamedLimit;
  private readonly metricsMiddleware: RequestMetricsMiddleware;

  constructor(
    private readonly cache: AuthCacheService,
    private readonly verified: VerifiedTokens,
    private readonly strategy: JwtStrategy,
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    private readonly visits: VisitsService,
    private readonly compressed: CompressedPages,
    private readonly inFlight: PagesInFlight,
    @Inject(REQUEST_LOGGER) private readonly requestLines: RequestLogger,
    config: AppConfig,
    metrics: MetricsService,
    reflector: Reflector,
  ) {
    this.limit = apiLimit(config);
    this.metricsMiddleware = new RequestMetricsMiddleware(metrics);
    const handlers: [string, VisitsVariant][] = [
      ['/visits/standard', 'standard'],
      ['/visits/plus', 'plus'],
    ];
    for (const [path, variant] of handlers) {
      // The controller's handler of the route (its method is named after the variant), whose metadata the guards read.
      const handler = Object.getOwnPropertyDescriptor(VisitsController.prototype, variant)?.value as Function;
      const scope = reflector.getAllAndOverride<string | undefined>(REQUIRED_SCOPE, [handler, VisitsController]);
      if (!scope) throw new Error(`${path} declares no scope: it cannot be answered before the guards`);
      this.routes.set(path, { path, variant, scope });
    }
  }

  /** Puts the lane in front of the server's request listener (Express's application). */
  install(server: Server, setup: LaneSetup): void {
    putAhead(server, (req) => this.routeOf(req), (req, res, route) => this.answer(req, res, route, setup));
  }

  /**
   * The route of a GET the lane may answer. A request with a body (a length or a transfer
   * coding) is left to Express, whose answer is the same, the body unread (see
   * keepingBodyErrors): rare enough not to be the lane's; and so is one with If-Match.
   */
  private routeOf(req: IncomingMessage): LaneRoute | undefined {
    if (req.method !== 'GET' || req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined) return undefined;
    // A failed If-Match is a 412 problem, which Express's path answers.
    if (req.headers['if-match'] !== undefined) return undefined;
    return this.routes.get(pathOf(req));
  }

  /**
   * Answers the request and gives true, or gives false with nothing written (the request is
   * then Express's). Never rejects.
   */
  async answer(req: IncomingMessage, res: ServerResponse, route: LaneRoute, setup: LaneSetup): Promise<boolean> {
    // The request line and metrics start now, whoever answers (Express's path does not start them twice).
    this.requestLines(req, res, nothing);
    this.metricsMiddleware.use(req, res, nothing);
    answeredByRoute(req, route.path);
    let principal: Principal | null;
    let query: VisitsQueryDto;
    let count: CountResult;
    try {
      principal = await this.knownCaller(req, route);
      if (principal === null) return false;
      query = entitledQuery(VisitsQueryDto, rawQueryString(req), setup.queryContext, principal);
      // The key is the caller's own, found live just now: it is not looked up again.
      const owner = principal.clientId;
      count = await countAhead(this.storage, req, this.limit, () => Promise.resolve(owner));
    } catch {
      // The guards or the query rules refuse it, or the count failed: Express's path says so.
      return false;
    }
    if (count.isBlocked) {
      handOnCount(req, this.limit, count);
      return false;
    }
    let answering = false;
    try {
      await this.inFlight.serve(
        res,
        query.Take,
        principal.clientId,
        () => this.visits.page(selectionOf(query), query, route.variant),
        (page, sending) => {
          answering = true;
          this.begin(req, res, setup, principal, count);
          return sendVisitsPage(req, res, page, this.compressed, sending);
        },
      );
    } catch (error) {
      if (!answering) {
        // The page could not be read (the database is away): Express's path reads it again or answers the problem.
        handOnCount(req, this.limit, count);
        return false;
      }
      res.destroy(error instanceof Error ? error : new Error(String(error)));
    }
    return true;
  }

  /** The caller when its API key is valid, its token was verified before and carries the route's scope; null otherwise. */
  private async knownCaller(req: IncomingMessage, route: LaneRoute): Promise<Principal | null> {
    const token = bearerCredentials(req);
    const claims = token === null ? undefined : this.verified.claimsOf(token);
    if (claims === undefined) return null;
    const apiKey = await keyHolderOf(this.cache, req.headers);
    const principal = await this.strategy.principalOf({ apiKey }, claims);
    return principal.scopes.has(route.scope) ? principal : null;
  }

  /** What Express's middlewares and the guards give every response besides the request line: rate limit, caller, security and CORS headers. */
  private begin(req: IncomingMessage, res: ServerResponse, setup: LaneSetup, principal: Principal, count: CountResult): void {
    setLimitHeaders(res, this.limit, count);
    (res as ServerResponse & { locals?: Record<string, unknown> }).locals = { clientId: principal.clientId };
    setAnswerHeaders(req, res, setup);
  }
}
