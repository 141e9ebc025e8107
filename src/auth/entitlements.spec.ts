import { ProblemException } from '../common/problem.js';
import { assertEntitled } from './entitlements.js';
import type { Principal } from './principal.js';

const principal = (over: Partial<Principal> = {}): Principal => ({
  clientId: 'svc_x',
  keyPrefix: 'svck_abcdefg',
  scopes: new Set(),
  clients: new Set([1001, 1003]),
  brands: null,
  visitTypes: null,
  ...over,
});

function refusal(p: Principal, selection: Parameters<typeof assertEntitled>[1]): { status: number; detail: string } {
  try {
    assertEntitled(p, selection);
  } catch (error) {
    const e = error as ProblemException;
    return { status: e.getStatus(), detail: e.detail };
  }
  throw new Error('expected a refusal');
}

describe('assertEntitled', () => {
  it('allows the credential its clients, and every brand and visit type by default', () => {
    expect(() => assertEntitled(principal(), { SvcClientId: 1003, SvcBrandId: 99, VisitTypes: ['MV', 'ZZ'] })).not.toThrow();
  });

  it('refuses another client with a 403 naming it', () => {
    expect(refusal(principal(), { SvcClientId: 1002 })).toEqual({ status: 403, detail: 'The credential is not entitled to SvcClientId 1002.' });
  });

  it('refuses a brand outside the credential brands', () => {
    const p = principal({ brands: new Set([5, 6]) });
    expect(() => assertEntitled(p, { SvcClientId: 1001, SvcBrandId: 6 })).not.toThrow();
    expect(refusal(p, { SvcClientId: 1001, SvcBrandId: 7 })).toEqual({ status: 403, detail: 'The credential is not entitled to SvcBrandId 7.' });
  });

  it('refuses visit types outside the credential visit types, naming each', () => {
    const p = principal({ visitTypes: new Set(['MV']) });
    expect(() => assertEntitled(p, { SvcClientId: 1001, VisitTypes: ['MV'] })).not.toThrow();
    expect(refusal(p, { SvcClientId: 1001, VisitTypes: ['MV', 'OF', 'TA'] })).toEqual({
      status: 403,
      detail: 'The credential is not entitled to the visit type(s) OF, TA.',
    });
  });
});
