import { Reflector } from '@nestjs/core';
import { guardCall, refusalOf } from '../../../test/helpers/guard-context.js';
import { ProblemException } from '../../common/problem.js';
import type { Principal } from '../principal.js';
import { Scope } from '../scopes.js';
import { ScopeGuard } from './scope.guard.js';

const principal = (...scopes: string[]): Principal => ({
  clientId: 'svc_1',
  keyPrefix: 'svck_abcdefg',
  scopes: new Set([Scope.Api, ...scopes]),
  clients: new Set([1001]),
  brands: null,
  visitTypes: null,
  selectableBrands: new Set([5]),
  selectableVisitTypes: new Set(['MV', 'OF', 'TA']),
});

describe('ScopeGuard', () => {
  const guard = new ScopeGuard(new Reflector());

  it('lets through a @Public() route, a route that names no scope, and a token with the scope', () => {
    expect(guard.canActivate(guardCall('open').context)).toBe(true);
    expect(guard.canActivate(guardCall('unscoped', { principal: principal() }).context)).toBe(true);
    expect(guard.canActivate(guardCall('branches', { principal: principal(Scope.Branches) }).context)).toBe(true);
  });

  it("refuses a token without the route's scope with a 403 and RFC 6750's insufficient_scope challenge", async () => {
    for (const caller of [principal(Scope.VisitsStandard), undefined]) {
      const error = await refusalOf(() => guard.canActivate(guardCall('branches', { principal: caller }).context));
      expect(error).toBeInstanceOf(ProblemException);
      const problem = error as ProblemException;
      expect(problem.getStatus()).toBe(403);
      expect(problem.detail).toBe("The access token lacks the scope 'branches/standard.read' this endpoint needs.");
      expect(problem.headers).toEqual({
        'WWW-Authenticate': 'Bearer realm="svc-results-api", error="insufficient_scope", scope="branches/standard.read"',
      });
    }
  });
});
