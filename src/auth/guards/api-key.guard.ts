import type { IncomingHttpHeaders } from 'node:http';
import { Injectable, type CanActivate, type ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { ProblemException } from '../../common/problem.js';
import { IS_PUBLIC } from '../../common/public.decorator.js';
import { AuthCacheService } from '../auth-cache.service.js';
import { apiKeyChallenge } from '../challenges.js';
import type { AuthenticatedRequest, KeyHolder } from '../principal.js';

/** First of the global guards: a known, unrevoked `svc-api-key` on every route not @Public(). */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly cache: AuthCacheService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, [context.getHandler(), context.getClass()])) return true;
    const request = context.switchToHttp().getRequest<AuthenticatedRequest>();
    request.apiKey = await keyHolderOf(this.cache, request.headers);
    return true;
  }
}

/** The credential whose `svc-api-key` a request carries; a 401 problem when it carries none, or one not known or revoked. */
export async function keyHolderOf(cache: AuthCacheService, headers: IncomingHttpHeaders): Promise<KeyHolder> {
  const presented = headers['svc-api-key'];
  if (typeof presented !== 'string' || presented.trim() === '') {
    throw new ProblemException(401, 'The svc-api-key header is required.', { headers: { 'WWW-Authenticate': apiKeyChallenge() } });
  }
  const key = await cache.apiKey(presented.trim());
  if (!key || key.revoked) {
    throw new ProblemException(401, apiKeyNotValid(presented), { headers: { 'WWW-Authenticate': apiKeyChallenge() } });
  }
  return { credentialId: key.credentialId, keyPrefix: key.prefix };
}

/**
 * Why a presented svc-api-key is refused. No key holds a comma; a value that does is two
 * headers, which Node joins with one ("a, b"), or a list: said so, not that a key is wrong.
 */
export function apiKeyNotValid(presented: string): string {
  return presented.includes(',') ? 'The request has more than one svc-api-key (two headers, or a list); it must have one.' : 'The svc-api-key is not valid.';
}
