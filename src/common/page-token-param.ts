import { applyDecorators } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional, Validate, ValidatorConstraint, type ValidationArguments, type ValidatorConstraintInterface } from 'class-validator';
import { PAGE_TOKEN_INVALID, PAGE_TOKEN_MAX_LENGTH, PAGE_TOKEN_OF_ANOTHER_QUERY, PAGE_TOKEN_PATTERN } from './page-token.js';
import { emptyIsAbsent, ID_MAX } from './query-fields.js';
import { queryContextOf } from './query-params.js';

/** A position a page token holds, as its query's rules found it. */
export type PagePosition = readonly (string | number)[];

/** Where the rule keeps the position of a valid token on the query it checked (see positionOf). */
const POSITION = Symbol('pagePosition');

export interface PageTokenRule<T extends object> {
  /**
   * The query a token of this parameter is bound to, from the query's other parameters;
   * undefined while one of those is broken (its own rule says so, and a token cannot be
   * matched against it).
   */
  scope(query: T): string | undefined;
  /** Whether a position is one this query can go on from. */
  position(position: readonly unknown[]): boolean;
}

const rules = new WeakMap<Function, PageTokenRule<object>>();

/** The rule of the query's class, or of the class it extends. */
function ruleOf(query: object): PageTokenRule<object> | undefined {
  for (let proto = Object.getPrototypeOf(query) as object | null; proto; proto = Object.getPrototypeOf(proto) as object | null) {
    const rule = rules.get(proto.constructor);
    if (rule) return rule;
  }
  return undefined;
}

/**
 * A page token is one of the query's parameters: a token that is no token of this
 * service's, or one of another query, is a broken rule reported with the query's others (a
 * 400, before the credential's entitlements are weighed), not found later by the service.
 */
@ValidatorConstraint({ name: 'pageToken' })
class PageTokenValid implements ValidatorConstraintInterface {
  validate(value: unknown, args: ValidationArguments): boolean {
    const position = verdict(value, args.object);
    if (typeof position === 'string') return false;
    // The query's own record of where it goes on from (kept with it when a valid query is reused).
    (args.object as Record<symbol, PagePosition>)[POSITION] = position;
    return true;
  }

  defaultMessage(args: ValidationArguments): string {
    const message = verdict(args.value, args.object);
    return typeof message === 'string' ? message : PAGE_TOKEN_INVALID;
  }
}

/** The position of a token of this query, or the message saying why it is not one. */
function verdict(value: unknown, query: object): PagePosition | string {
  const rule = ruleOf(query);
  const tokens = queryContextOf(query)?.pageTokens;
  if (typeof value !== 'string' || !rule || !tokens) return PAGE_TOKEN_INVALID;
  const opened = tokens.open(value);
  if (!opened) return PAGE_TOKEN_INVALID;
  // A token of another query holds that query's kind of position: the scope says more.
  const scope = rule.scope(query);
  if (scope !== undefined && opened.scope !== scope) return PAGE_TOKEN_OF_ANOTHER_QUERY;
  if (!rule.position(opened.position)) return PAGE_TOKEN_INVALID;
  return Object.freeze(opened.position);
}

/**
 * `after`: the page token of the page before. `rule` binds it to the query (its scope) and
 * says which positions the query can go on from; the position is read with {@link positionOf}.
 */
export function PageTokenParam<T extends object>(description: string, rule: PageTokenRule<T>): PropertyDecorator {
  return applyDecorators(
    (target: object) => void rules.set(target.constructor, rule),
    ApiProperty({ name: 'after', type: 'string', required: false, description, maxLength: PAGE_TOKEN_MAX_LENGTH, pattern: PAGE_TOKEN_PATTERN }),
    Transform(emptyIsAbsent),
    Validate(PageTokenValid),
    IsOptional(),
  );
}

/** The position of the query's valid `after` token; undefined when the query has none. */
export function positionOf(query: object): PagePosition | undefined {
  return (query as Record<symbol, PagePosition | undefined>)[POSITION];
}

/** An id as the query's rules take it (1..ID_MAX), for scopes built of ids. */
export function isQueryId(value: unknown): value is number {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= ID_MAX;
}

/** A non-negative safe integer: the positions tokens hold are ids, orders and write sequences. */
export function isPositionNumber(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 0;
}
