import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ProblemException } from '../../common/problem.js';
import { IS_PUBLIC } from '../../common/public.decorator.js';
import { bearerChallenge } from '../challenges.js';
import type { AuthenticatedRequest } from '../principal.js';
import { REQUIRED_SCOPE } from '../requires-scope.decorator.js';

/** Third global guard: the token carries the scope the route declares with @RequiresScope. */
@Injectable()
export class ScopeGuard implements CanActivate {
  constructor(private readonly reflector: Reflector) {}

  canActivate(context: ExecutionContext): boolean {
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;
    const scope = this.reflector.getAllAndOverride<string | undefined>(REQUIRED_SCOPE, targets);
    const principal = context.switchToHttp().getRequest<AuthenticatedRequest>().principal;
    if (!scope || principal?.scopes.has(scope)) return true;
    throw new ProblemException(403, `The access token lacks the scope '${scope}' this endpoint needs.`, {
      headers: { 'WWW-Authenticate': bearerChallenge({ error: 'insufficient_scope', scope }) },
    });
  }
}
