import { Injectable, type ExecutionContext } from '@nestjs/common';
import type { Observable } from 'rxjs';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import { ProblemException } from '../../common/problem.js';
import { IS_PUBLIC } from '../../common/public.decorator.js';
import type { AuthenticatedRequest, Principal } from '../principal.js';
import { TokenRejected } from './jwt.strategy.js';

const REALM = 'realm="svc-results-api"';

function quoted(text: string): string {
  return text.replace(/["\\]/g, '');
}

/** Second global guard: a valid bearer access token (RFC 6750 errors and challenges). */
@Injectable()
export class JwtAuthGuard extends AuthGuard('jwt') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override canActivate(context: ExecutionContext): boolean | Promise<boolean> | Observable<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    return super.canActivate(context);
  }

  override handleRequest<TUser = Principal>(err: unknown, user: unknown, info: unknown, context: ExecutionContext): TUser {
    if (!err && user) {
      const http = context.switchToHttp();
      http.getRequest<AuthenticatedRequest>().principal = user as Principal;
      // The request log line names the caller.
      http.getResponse<{ locals: Record<string, unknown> }>().locals.clientId = (user as Principal).clientId;
      return user as TUser;
    }
    const problem = err ?? info;
    if (problem instanceof Error && problem.message === 'No auth token') {
      throw new ProblemException(401, 'An access token is required: send Authorization: Bearer <token>.', {
        headers: { 'WWW-Authenticate': `Bearer ${REALM}` },
      });
    }
    if (problem instanceof Error && !(problem instanceof TokenRejected) && !isJwtError(problem)) throw problem;
    const detail =
      problem instanceof TokenRejected
        ? problem.message
        : (problem as Error | undefined)?.name === 'TokenExpiredError'
          ? 'The access token has expired.'
          : 'The access token is not valid.';
    throw new ProblemException(401, detail, {
      headers: { 'WWW-Authenticate': `Bearer ${REALM}, error="invalid_token", error_description="${quoted(detail)}"` },
    });
  }
}

function isJwtError(error: Error): boolean {
  return ['JsonWebTokenError', 'TokenExpiredError', 'NotBeforeError'].includes(error.name);
}
