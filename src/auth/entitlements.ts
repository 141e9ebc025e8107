import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import { ProblemException } from '../common/problem.js';
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
  SvcClientId?: number;
  SvcBrandId?: number;
  /** Codes as a list or as the comma-separated parameter text. */
  VisitTypes?: string[] | string;
}

/**
 * The one place that decides whether a credential may read the data a query selects:
 * its clients, its brands (all by default) and its visit types (all by default).
 */
export function assertEntitled(principal: Principal | undefined, selection: EntitledSelection): void {
  if (!principal) {
    throw new ProblemException(401, 'An access token is required: send Authorization: Bearer <token>.', {
      headers: { 'WWW-Authenticate': 'Bearer realm="svc-results-api"' },
    });
  }
  const { SvcClientId: client, SvcBrandId: brand, VisitTypes: types } = selection;
  if (client !== undefined && !principal.clients.has(client)) {
    throw notEntitled(`SvcClientId ${client}`);
  }
  if (brand !== undefined && principal.brands && !principal.brands.has(brand)) {
    throw notEntitled(`SvcBrandId ${brand}`);
  }
  const codes = typeof types === 'string' ? types.split(',').map((t) => t.toUpperCase()) : (types ?? []);
  const refused = codes.filter((t) => principal.visitTypes && !principal.visitTypes.has(t));
  if (refused.length > 0) {
    throw notEntitled(`the visit type(s) ${refused.join(', ')}`);
  }
}

/** A 403 for a resource of another client than the query's (a menu, an image), in the same words. */
export function notEntitled(what: string): ProblemException {
  return new ProblemException(403, `The credential is not entitled to ${what}.`);
}

const EntitledQueryFor = createParamDecorator((dto: DtoClass<object>, context: ExecutionContext) => {
  const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
  const query = parseQuery(dto, rawQueryString(request), requestQueryContext(request));
  assertEntitled(request.principal, query);
  return query;
});

/**
 * The query of a data endpoint: parsed and validated by its DTO (400 with every broken
 * rule), then checked against the caller's entitlements (403).
 */
export function EntitledQuery(): ParameterDecorator {
  return (target, key, index) => {
    const dto = parameterDto(target, key, index);
    EntitledQueryFor(dto)(target, key, index);
    if (key !== undefined) documentQuery(dto, target, key);
  };
}
