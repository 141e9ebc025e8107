import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import { Inject, Injectable } from '@nestjs/common';
import { InjectThrottlerStorage, type ThrottlerStorage } from '@nestjs/throttler';
import { readBodyAhead } from '../common/body-errors.js';
import { sendBody } from '../common/compression.js';
import { namesForm, nothing, pathOf, putAhead, setAnswerHeaders, type LaneSetup } from '../common/lane.js';
import { NO_STORE_HEADERS, OAuthException } from '../common/oauth-error.js';
import { AppConfig } from '../config/app-config.js';
import { REQUEST_LOGGER, type RequestLogger } from '../logging/logging.module.js';
import { MetricsService } from '../metrics/metrics.service.js';
import { answeredByRoute, RequestMetricsMiddleware } from '../metrics/request-metrics.middleware.js';
import { apiLimit, countAhead, handOnCount, setLimitHeaders, tokenLimit, TOKEN_PATH, type NamedLimit } from '../rate-limit/rate-limit.guard.js';
import type { CountResult } from '../rate-limit/rate-limit.storage.js';
import { AuthCacheService } from './auth-cache.service.js';
import { sentByScript, TokenService } from './token.service.js';


/** An answer of the token endpoint: the token, or an OAuth error. */
interface TokenAnswer {
  status: number;
  headers: Readonly<Record<string, string>>;
  body: unknown;
}

/**
 * The token endpoint, answered before Express and Nest see the request. A token request costs
 * a keyed hash and a signature; Express's router, Nest's pipeline and its reply cost about as
 * much again (docs/decisions.md, "The token lane").
 *
 * The lane takes a POST of /connect/token with a form body and an svc-api-key header. It reads
 * the body with the very parser Express runs, counts the request under the same limits with
 * the same storage and keys as the rate-limit guard, and answers what TokenService.issue gives,
 * the token or its OAuth error, with the headers Express's path gives (request line, metrics,
 * rate-limit, security, CORS, no-store, compression). It hands the request on to Express,
 * which answers it in full, when the body is absent or could not be read (the body's failure
 * and the lane's counts go with it, so nothing is read or counted twice), when a limit refuses
 * it (the guard answers the 429 with the lane's count), and when issuing failed with anything
 * but an OAuth error (such as a database that cannot be reached: Express's path tries again
 * and answers the problem).
 */
@Injectable()
export class TokenLane {
  private readonly limits: NamedLimit[];
  private readonly metricsMiddleware: RequestMetricsMiddleware;

  constructor(
    private readonly tokens: TokenService,
    private readonly cache: AuthCacheService,
    @InjectThrottlerStorage() private readonly storage: ThrottlerStorage,
    @Inject(REQUEST_LOGGER) private readonly requestLines: RequestLogger,
    config: AppConfig,
    metrics: MetricsService,
  ) {
    // In the guard's order: the limit per API key, then the token endpoint's own per client id.
    this.limits = [apiLimit(config), tokenLimit(config)];
    this.metricsMiddleware = new RequestMetricsMiddleware(metrics);
  }

  /** Puts the lane in front of the server's request listener. */
  install(server: Server, setup: LaneSetup): void {
    putAhead(server, (req) => (this.takes(req) ? TOKEN_PATH : undefined), (req, res) => this.answer(req, res, setup));
  }

  /**
   * A token request the lane may answer: a POST of the path with a form body. Without an API
   * key it is left to Express, whose rate limit counts it by the client's address, which
   * Express works out (trust proxy).
   */
  private takes(req: IncomingMessage): boolean {
    if (req.method !== 'POST' || pathOf(req) !== TOKEN_PATH) return false;
    const key = req.headers['svc-api-key'];
    return typeof key === 'string' && key.trim() !== '' && namesForm(req.headers['content-type']);
  }

  /** Answers the request and gives true, or gives false with nothing written (the request is then Express's). Never rejects. */
  async answer(req: IncomingMessage, res: ServerResponse, setup: LaneSetup): Promise<boolean> {
    // The request line starts now, as on Express's path, where it comes before everything else;
    // the lane or Express answers, and Express's path does not start it twice.
    this.requestLines(req, res, nothing);
    const form = await readBodyAhead(setup.formParser, req, res);
    if (typeof form !== 'object' || form === null) return false;
    // The metrics start once the body is in, as on Express's path, where they follow the body
    // parsers (so a slow upload is not the service's time), and before the key is looked up, as
    // there, where the guards look it up: a database slow to answer is the service's time (looked
    // up before them, a token request that waited 2 s on the database was timed at 9 ms).
    this.metricsMiddleware.use(req, res, nothing);
    answeredByRoute(req, TOKEN_PATH);
    // A key that is not live is refused on Express's path, where the limits count it by the caller's address.
    const owner = await this.keyOwner(req);
    if (owner === null) return false;
    // The request's line names the caller: the credential whose live key it carries (Express,
    // should it answer after all, keeps these locals).
    (res as ServerResponse & { locals?: Record<string, unknown> }).locals = { clientId: owner };
    const counts = await this.count(req, owner);
    if (counts === null) return false;
    let answer: TokenAnswer;
    try {
      const headers = req.headers;
      const issued = await this.tokens.issue({
        apiKey: headers['svc-api-key'] as string,
        authorization: headers.authorization,
        form: form as Record<string, unknown>,
        fromScript: sentByScript(headers),
      });
      answer = { status: 200, headers: NO_STORE_HEADERS, body: issued };
    } catch (error) {
      if (!(error instanceof OAuthException)) {
        this.handOn(req, counts);
        return false;
      }
      const rendered = error.renderResponse();
      answer = { status: rendered.status, headers: rendered.headers, body: rendered.body };
    }
    try {
      for (const [limit, count] of counts) setLimitHeaders(res, limit, count);
      setAnswerHeaders(req, res, setup);
      res.statusCode = answer.status;
      for (const [name, value] of Object.entries(answer.headers)) res.setHeader(name, value);
      res.setHeader('Content-Type', 'application/json; charset=utf-8');
      await sendBody(req, res, Buffer.from(JSON.stringify(answer.body)));
    } catch (error) {
      res.destroy(error instanceof Error ? error : new Error(String(error)));
    }
    return true;
  }

  /**
   * Whose live key the request carries (takes() saw one); null when it is not a live key, or
   * when that cannot be told now (the credentials cannot be read: Express's path answers).
   */
  private async keyOwner(req: IncomingMessage): Promise<string | null> {
    try {
      return await this.cache.keyOwner((req.headers['svc-api-key'] as string).trim());
    } catch {
      return null;
    }
  }

  /**
   * The request counted under each limit in turn, as the guard counts it, for the key's owner
   * (looked up already); null when a limit refuses it or a count failed, with what was counted
   * handed on to the guard.
   */
  private async count(req: IncomingMessage, owner: string): Promise<[NamedLimit, CountResult][] | null> {
    const counts: [NamedLimit, CountResult][] = [];
    const known = (): Promise<string> => Promise.resolve(owner);
    for (const limit of this.limits) {
      let count: CountResult;
      try {
        count = await countAhead(this.storage, req, limit, known);
      } catch {
        this.handOn(req, counts);
        return null;
      }
      counts.push([limit, count]);
      if (count.isBlocked) {
        this.handOn(req, counts);
        return null;
      }
    }
    return counts;
  }

  private handOn(req: IncomingMessage, counts: [NamedLimit, CountResult][]): void {
    for (const [limit, count] of counts) handOnCount(req, limit, count);
  }
}
