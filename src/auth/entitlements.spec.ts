import { ProblemException } from '../common/problem.js';
import { selectionOf } from './entitled-query.js';
import { effectiveSelection } from './entitlements.js';
import type { Principal } from './principal.js';

/** A credential of clients 1001 (brands 5, 6) and 1003 (brand 99); what it may name follows its restrictions, as the credential cache makes it. */
const principal = (over: Partial<Omit<Principal, 'selectableBrands' | 'selectableVisitTypes'>> = {}): Principal => ({
  clientId: 'svc_x',
  keyPrefix: 'svck_abcdefg',
  scopes: new Set(),
  clients: new Set([1001, 1003]),
  brands: null,
  visitTypes: null,
  ...over,
  selectableBrands: over.brands ?? new Set([5, 6, 99]),
  selectableVisitTypes: over.visitTypes ?? new Set(['MV', 'OF', 'TA']),
});

function refusal(p: Principal, selection: Parameters<typeof effectiveSelection>[1]): { status: number; detail: string } {
  try {
    effectiveSelection(p, selection);
  } catch (error) {
    const e = error as ProblemException;
    return { status: e.getStatus(), detail: e.detail };
  }
  throw new Error('expected a refusal');
}

describe('effectiveSelection', () => {
  it('allows the credential its clients, and every brand and visit type by default', () => {
    expect(effectiveSelection(principal(), { SvcClientId: 1003 })).toEqual({ clientId: 1003, brandIds: null, visitTypes: null });
    expect(effectiveSelection(principal(), { SvcClientId: 1003, SvcBrandId: 99, VisitTypes: 'ta,MV,mv' })).toEqual({
      clientId: 1003,
      brandIds: [99],
      visitTypes: ['MV', 'TA'],
    });
  });

  it('refuses, without a restriction, a brand of none of its clients and a visit type that does not exist', () => {
    expect(refusal(principal(), { SvcClientId: 1001, SvcBrandId: 21 })).toEqual({ status: 403, detail: 'The credential is not entitled to SvcBrandId 21.' });
    expect(refusal(principal(), { SvcClientId: 1001, VisitTypes: 'MV,XX' })).toEqual({
      status: 403,
      detail: 'The credential is not entitled to the visit type(s) XX.',
    });
    // A brand of another of its clients selects nothing rather than being refused (see interface.md).
    expect(effectiveSelection(principal(), { SvcClientId: 1001, SvcBrandId: 99 }).brandIds).toEqual([99]);
  });

  it('refuses another client with a 403 naming it', () => {
    expect(refusal(principal(), { SvcClientId: 1002 })).toEqual({ status: 403, detail: 'The credential is not entitled to SvcClientId 1002.' });
  });

  it('refuses a brand outside the credential brands', () => {
    const p = principal({ brands: new Set([5, 6]) });
    expect(effectiveSelection(p, { SvcClientId: 1001, SvcBrandId: 6 }).brandIds).toEqual([6]);
    expect(refusal(p, { SvcClientId: 1001, SvcBrandId: 7 })).toEqual({ status: 403, detail: 'The credential is not entitled to SvcBrandId 7.' });
  });

  it('refuses visit types outside the credential visit types, naming each', () => {
    const p = principal({ visitTypes: new Set(['MV']) });
    expect(effectiveSelection(p, { SvcClientId: 1001, VisitTypes: ['MV'] }).visitTypes).toEqual(['MV']);
    expect(refusal(p, { SvcClientId: 1001, VisitTypes: ['MV', 'OF', 'TA'] })).toEqual({
      status: 403,
      detail: 'The credential is not entitled to the visit type(s) OF, TA.',
    });
  });

  it('restricts a query without filters to the entitled brands and visit types', () => {
    const p = principal({ brands: new Set([9, 5]), visitTypes: new Set(['OF', 'MV']) });
    expect(effectiveSelection(p, { SvcClientId: 1001 })).toEqual({ clientId: 1001, brandIds: [5, 9], visitTypes: ['MV', 'OF'] });
    expect(effectiveSelection(p, { SvcClientId: 1001, VisitTypes: '' })).toEqual({ clientId: 1001, brandIds: [5, 9], visitTypes: ['MV', 'OF'] });
    expect(effectiveSelection(p, { SvcClientId: 1001, SvcBrandId: 9, VisitTypes: 'of' })).toEqual({
      clientId: 1001,
      brandIds: [9],
      visitTypes: ['OF'],
    });
  });

  it('turns an entitlement to no brand or no visit type into empty lists, never into "all"', () => {
    const p = principal({ brands: new Set(), visitTypes: new Set() });
    expect(effectiveSelection(p, { SvcClientId: 1001 })).toEqual({ clientId: 1001, brandIds: [], visitTypes: [] });
    expect(refusal(p, { SvcClientId: 1001, SvcBrandId: 5 }).status).toBe(403);
    expect(refusal(p, { SvcClientId: 1001, VisitTypes: 'MV' }).status).toBe(403);
  });

  it('refuses a request without a principal with 401', () => {
    expect(refusal(undefined as unknown as Principal, { SvcClientId: 1001 }).status).toBe(401);
  });
});

describe('selectionOf', () => {
  it('fails for a query that was never checked against the entitlements', () => {
    expect(() => selectionOf({ SvcClientId: 1001 })).toThrow('@EntitledQuery');
  });
});
