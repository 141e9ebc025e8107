import { createParamDecorator, type ExecutionContext } from '@nestjs/common';
import type { Request } from 'express';
import {
  documentQuery,
  parameterDto,
  parseQuery,
  rawQueryString,
  requestQueryContext,
  type DtoClass,
} from '../common/query-params.js';
import { ValidationProblem } from '../common/problem.js';
import { effectiveSelection, type EffectiveSelection, type EntitledSelection } from './entitlements.js';
import type { AuthenticatedRequest, Principal } from './principal.js';

/*
 * The query of a data endpoint as a handler parameter: parsed and validated by its DTO, then
 * checked by the entitlement rule (entitlements.ts), and published in the contract.
 */

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

/**
 * The query string read into `dto` (400 with every broken rule), checked against the
 * caller's entitlements (403), with its effective selection attached for selectionOf.
 */
export function entitledQuery<T extends EntitledSelection>(dto: DtoClass<T>, queryString: string, context: object | undefined, principal: Principal | undefined): T {
  return entitle(parseQuery(dto, queryString, context), principal);
}

/** Checks a query that passed its rules against the caller's entitlements (403), attaching its effective selection. */
export function entitle<T extends EntitledSelection>(query: T, principal: Principal | undefined): T {
  const selection = effectiveSelection(principal, query);
  Object.defineProperty(query, SELECTION, { value: Object.freeze(selection), enumerable: false });
  return query;
}

/**
 * The query of an endpoint whose body has rules too: its broken rules are kept, not thrown,
 * so that the endpoint reports them with its body's in one 400, and then checks the
 * entitlements itself (`entitle`).
 */
export interface QueryRules<T> {
  /** The query when it broke no rule. */
  query: T | null;
  errors: string[];
}

const QueryRulesFor = createParamDecorator((dto: DtoClass<EntitledSelection>, context: ExecutionContext): QueryRules<EntitledSelection> => {
  const request = context.switchToHttp().getRequest<Request>();
  try {
    return { query: parseQuery(dto, rawQueryString(request), requestQueryContext(request)), errors: [] };
  } catch (error) {
    if (error instanceof ValidationProblem) return { query: null, errors: error.errors ?? [] };
    throw error;
  }
});

/** The query of `dto` read with its broken rules kept (see QueryRules), and published in the contract. */
export function QueryWithRules(dto: DtoClass<EntitledSelection>): ParameterDecorator {
  return (target, key, index) => {
    QueryRulesFor(dto)(target, key, index);
    if (key !== undefined) documentQuery(dto, target, key);
  };
}

const EntitledQueryFor = createParamDecorator((dto: DtoClass<EntitledSelection>, context: ExecutionContext) => {
  const request = context.switchToHttp().getRequest<Request & AuthenticatedRequest>();
  return entitledQuery(dto, rawQueryString(request), requestQueryContext(request), request.principal);
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
