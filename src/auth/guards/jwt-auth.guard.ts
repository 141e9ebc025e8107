import { Injectable, Logger, type ExecutionContext } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import jsonwebtoken from 'jsonwebtoken';
import { ProblemException } from '../../common/problem.js';
import { IS_PUBLIC } from '../../common/public.decorator.js';
import { accessTokenRequired, bearerChallenge } from '../challenges.js';
import type { AuthenticatedRequest, Principal } from '../principal.js';
import { bearerCredentials } from './bearer-token.js';
import { REPEATED_AUTHORIZATION, REPEATED_AUTHORIZATION_DETAIL } from '../../common/repeated-authorization.js';
import { VerifiedTokens } from '../verified-tokens.js';
import { JwtStrategy, KeyringUnavailable, TokenRejected } from './jwt.strategy.js';

// passport-jwt verifies with jsonwebtoken: these are the classes of its verdicts on a token.
const { JsonWebTokenError, TokenExpiredError } = jsonwebtoken;

function invalidToken(detail: string): ProblemException {
  return new ProblemException(401, detail, {
    headers: { 'WWW-Authenticate': bearerChallenge({ error: 'invalid_token', description: detail }) },
  });
}

/** Second global guard: a valid bearer access token (RFC 6750 errors and challenges). */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  private readonly logger = new Logger('JwtAuthGuard');

  constructor(
    private readonly reflector: Reflector,
    private readonly verified: VerifiedTokens,
    private readonly strategy: JwtStrategy,
  ) {
    super();
  }

  override canActivate(context: ExecutionContext): boolean | Promise<boolean> | Observable<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const token = bearerCredentials(context.switchToHttp().getRequest<AuthenticatedRequest>());
    if (token === null) throw accessTokenRequired();
    if (token === REPEATED_AUTHORIZATION) throw invalidToken(REPEATED_AUTHORIZATION_DETAIL);
    const claims = this.verified.claimsOf(token);
    // A token verified before: its signature is not checked again, the rest is (see VerifiedTokens).
    if (claims) return this.accept(context, claims);
    return super.canActivate(context);
  }

  private async accept(context: ExecutionContext, claims: object): Promise<boolean> {
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    let principal: Principal;
    try {
      principal = await this.strategy.principalOf(request, claims);
    } catch (error) {
      throw this.refusal(error, undefined);
    }
    this.handleRequest(null, principal, undefined, context);
    return true;
  }

  override handleRequest<TUser = Principal>(err: unknown, user: unknown, info: unknown, context: ExecutionContext): TUser {
    if (!err && user) {
      const http = context.switchToHttp();
      http.getRequest<AuthenticatedRequest>().principal = user as Principal;
      // The request log line names the caller.
      http.getResponse<{ locals: Record<string, unknown> }>().locals.clientId = (user as Principal).clientId;
      return user as TUser;
    }
    throw this.refusal(err, info);
  }

  /**
   * What a failed token check becomes. Which failures are the client's and which the service's
   * is decided by where they come from, never by message text:
   * - `err` is what validate() threw, after the signature verified: TokenRejected is the
   *   client's; anything else is the credential lookup failing, a server fault that stays one
   *   (500, or 503 when the database is away).
   * - `info` is what the strategy failed with: TokenRejected from reading the token's header,
   *   KeyringUnavailable when the signing keys could not be read (a server fault: its cause is
   *   thrown as it is), or jsonwebtoken's verdict on the token, checked with a key the service
   *   trusts. Its own error classes say expired or not valid; anything else it throws comes
   *   from decoding the token's bytes (the ECDSA decoder's TypeError on a signature of the
   *   wrong length, a JSON SyntaxError), so it is invalid_token as well, never a 500.
   */
  private refusal(err: unknown, info: unknown): unknown {
    if (err) return err instanceof TokenRejected ? invalidToken(err.message) : err;
    if (info instanceof KeyringUnavailable) return info.cause;
    if (info instanceof TokenRejected) return invalidToken(info.message);
    if (info instanceof TokenExpiredError) return invalidToken('The access token has expired.');
    if (info instanceof JsonWebTokenError) return invalidToken('The access token is not valid.');
    this.logger.debug(`bearer token refused as malformed: ${info instanceof Error ? `${info.name}: ${info.message}` : String(info)}`);
    return invalidToken('The access token is malformed.');
  }
}
