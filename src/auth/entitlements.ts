import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ProblemException } from '../common/problem.js';
import { visitTypeCodes } from '../common/query-fields.js';
import {
  documentQuery,
  parameterDto,
  parseQuery,
  rawQueryString,
  requestQueryContext,
  type DtoClass,
} from '../common/query-params.js';
import type { AuthenticatedRequest, Principal } from './principal.js';

/** The parameters by which a request selects data; each is checked against the credential. */
export interface EntitledSelection {
  SvcClientId: number;
  SvcBrandId?: number;
  /** Codes as a list or as the comma-separated parameter text. */
  VisitTypes?: string[] | string;
}

/**
 * What a request may read: the query's filters intersected with the credential's entitlement.
 * A list is the whole of what may be read (an empty list: nothing); null means no restriction.
 * Data is only ever read through this, never through the query's own filters.
 */
export interface EffectiveSelection {
  clientId: number;
  /** Brand ids, ascending; null for every brand of the client (and rows without a brand). */
  brandIds: readonly number[] | null;
  /** Visit type codes, upper-case and sorted; null for every type. */
  visitTypes: readonly string[] | null;
}

/**
 * The one place that decides what a credential may read of the data a query selects: its
 * clients, its brands (all by default) and its visit types (all by default). A filter outside
 * the entitlement is a 403; without a filter, the entitlement itself is the filter.
 */
export function effectiveSelection(principal: Principal | undefined, selection: EntitledSelection): EffectiveSelection {
  if (!principal) {
    throw new ProblemException(401, 'An access token is required: send Authorization: Bearer <token>.', {
      headers: { 'WWW-Authenticate': 'Bearer realm="svc-results-api"' },
    });
  }
  const { SvcClientId: clientId, SvcBrandId: brand } = selection;
  if (!principal.clients.has(clientId)) throw notEntitled(`SvcClientId ${clientId}`);

  const entitledBrands = principal.brands;
  if (brand !== undefined && entitledBrands && !entitledBrands.has(brand)) throw notEntitled(`SvcBrandId ${brand}`);
  const brandIds = brand !== undefined ? [brand] : entitledBrands ? [...entitledBrands].sort((a, b) => a - b) : null;

  const asked = visitTypeCodes(selection.VisitTypes);
  const entitledTypes = principal.visitTypes;
  const refused = entitledTypes ? asked.filter((t) => !entitledTypes.has(t)) : [];
  if (refused.length > 0) throw notEntitled(`the visit type(s) ${refused.join(', ')}`);
  const visitTypes = asked.length > 0 ? asked : entitledTypes ? [...entitledTypes].sort() : null;

  return { clientId, brandIds, visitTypes };
}

/** A 403 for a resource of another client than the query's (a menu, an image), in the same words. */
export function notEntitled(what: string): ProblemException {
  return new ProblemException(403, `The credential is not entitled to ${what}.`);
}

/** Where the checked selection is kept on the query object that @EntitledQuery() returns. */
const SELECTION = Symbol('effectiveSelection');

/**
 * The effective selection of a query that went through @EntitledQuery(). A query that did not
 * is a programming error: it fails the request rather than read unrestricted data.
 */
export function selectionOf(query: object): EffectiveSelection {
  const selection = (query as Record<symbol, EffectiveSelection | undefined>)[SELECTION];
  if (!selection) throw new Error('the query was not checked against the credential entitlements (@EntitledQuery)');
  return selection;
}

const EntitledQueryFor = createParamDecorator((dto: DtoClass<EntitledSelection>, context: ExecutionContext) => {
  const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
  const query = parseQuery(dto, rawQueryString(request), requestQueryContext(request));
  const selection = effectiveSelection(request.principal, query);
  Object.defineProperty(query, SELECTION, { value: Object.freeze(selection), enumerable: false });
  return query;
});

/**
 * The query of a data endpoint: parsed and validated by its DTO (400 with every broken
 * rule), then checked against the caller's entitlements (403). Its effective selection is
 * read with {@link selectionOf}.
 */
export function EntitledQuery(): ParameterDecorator {
  return (target, key, index) => {
    const dto = parameterDto(target, key, index) as DtoClass<EntitledSelection>;
    EntitledQueryFor(dto)(target, key, index);
    if (key !== undefined) documentQuery(dto, target, key);
  };
}
