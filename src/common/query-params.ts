import type { IncomingMessage } from 'node:http';
import { ApiQuery, DECORATORS } from '@nestjs/swagger';
import { LRUCache } from 'lru-cache';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, validateSync, type ValidationError } from 'class-validator';
import type { Request } from 'express';
import type { PageTokens } from './page-token.js';
import { ValidationProblem } from './problem.js';
import { visibleName } from './visible-text.js';

export type DtoClass<T> = new () => T;

const namesCache = new WeakMap<Function, Map<string, string>>();

/**
 * Settings the rules of a query may need (limits, today's date), attached to the DTO
 * instance while it is validated. Rules read it with {@link queryContextOf}.
 */
export const QUERY_CONTEXT = Symbol('queryContext');

export interface QueryContext {
  /** Today's date, `yyyy-mm-dd`, in the service's time zone. */
  today(): string;
  /** Largest Take of the visits endpoints. */
  takeMax: number;
  /** Largest FromDate..ToDate range, in days, of the visits endpoints. */
  maxRangeDays: number;
  /** The service's time zone (RESULTS_TIMEZONE): local date-times are read in it. */
  zone: string;
  /** How far back, in days, a change feed may start. */
  changesRetentionDays: number;
  /** The current instant. */
  now(): Date;
  /** The service's page tokens, which `after` parameters are checked with (see PageTokenParam). */
  pageTokens: PageTokens;
}

export function queryContextOf(object: object): QueryContext | undefined {
  return (object as Record<symbol, QueryContext | undefined>)[QUERY_CONTEXT];
}

/**
 * The DTO's declared parameters, keyed by their name in lower case (ASCII's). Properties
 * whose name starts with `_` hold rules across parameters (a date range) and are not parameters.
 */
function parameterNames(dto: Function): Map<string, string> {
  let names = namesCache.get(dto);
  if (!names) {
    names = new Map();
    for (const meta of getMetadataStorage().getTargetValidationMetadatas(dto, '', true, false)) {
      if (!meta.propertyName.startsWith('_')) names.set(asciiLower(meta.propertyName), meta.propertyName);
    }
    namesCache.set(dto, names);
  }
  return names;
}

/**
 * A name in lower case by ASCII's rules alone: Unicode's would fold other characters into
 * ASCII letters (the Kelvin sign U+212A to `k`), reading `Ta\u212Ae` as `Take`.
 */
function asciiLower(name: string): string {
  return name.replace(/[A-Z]+/g, (letters) => letters.toLowerCase());
}

/** The query string exactly as sent, without Express's own parsing (which nests and merges). */
export function rawQueryString(request: Pick<IncomingMessage, 'url'> & { originalUrl?: string }): string {
  const url = request.originalUrl ?? request.url ?? '';
  const at = url.indexOf('?');
  return at < 0 ? '' : url.slice(at + 1);
}

/**
 * One message per parameter: a missing value if it is missing, else the rule declared first
 * (top-most decorator) among those it broke. class-validator checks presence first and runs
 * the other decorators bottom-up, so that is the last constraint listed.
 */
function firstMessage(constraints: Record<string, string> = {}): string | undefined {
  return constraints.isDefined ?? Object.values(constraints).at(-1);
}

function firstMessages(errors: ValidationError[], order: string[]): string[] {
  const byProperty = new Map(errors.map((e) => [e.property, firstMessage(e.constraints)]));
  const rules = errors.filter((e) => e.property.startsWith('_')).map((e) => firstMessage(e.constraints));
  return [...order.flatMap((property) => byProperty.get(property) ?? []), ...rules.filter((m) => m !== undefined)];
}

/**
 * Reads the query string into the DTO: parameter names match case-insensitively, a
 * parameter given twice is a violation, unknown parameters are ignored. Every violated
 * rule is reported at once in one 400 problem.
 */
export function parseQuery<T extends object>(dto: DtoClass<T>, queryString: string, context?: object): T {
  // A query string valid a moment ago is valid now: its rules read the clock at most to the
  // second. A partner paging or polling sends the same strings again and again.
  const key = queryString.length <= 1024 ? `${Math.floor(Date.now() / 1000)}|${queryString}` : undefined;
  let valid = key === undefined ? undefined : parsedQueries(dto, context).get(key);
  if (valid === undefined) {
    valid = validQuery(dto, queryString, context);
    if (key !== undefined) parsedQueries(dto, context).set(key, Object.freeze(valid));
  }
  // A copy: callers attach what they derive from it (see entitlements.ts).
  const instance = Object.assign(Object.create(dto.prototype as object) as T, valid);
  if (context) Object.defineProperty(instance, QUERY_CONTEXT, { value: context, enumerable: false });
  return instance;
}

/** Queries found valid, per DTO and context, for a second at most (the second is part of the key). */
const validQueries = new WeakMap<Function, WeakMap<object, LRUCache<string, object>>>();
const NO_CONTEXT = {};

function parsedQueries(dto: Function, context: object = NO_CONTEXT): LRUCache<string, object> {
  let byContext = validQueries.get(dto);
  if (!byContext) validQueries.set(dto, (byContext = new WeakMap()));
  let cache = byContext.get(context);
  if (!cache) byContext.set(context, (cache = new LRUCache({ max: 1000 })));
  return cache;
}

/**
 * The name before the brackets of a key written as an array: `VisitTypes` of `VisitTypes[]`,
 * `SvcBrandId[0]`, `VisitTypes[types]`, and of nested or long forms too (`SvcBrandId[0][0]`,
 * `Take[][]`): whatever follows the first `[`, a library meant the parameter.
 */
const ARRAY_FORM = /^([^[]+)\[/;

/** Decodes UTF-8 strictly (bytes that are no UTF-8 throw rather than become U+FFFD), a leading BOM kept as URLSearchParams keeps it. */
const STRICT_UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });
const LENIENT_UTF8 = new TextDecoder('utf-8', { ignoreBOM: true });

/** The bytes of a query's name or value as sent: `+` a space, a percent-escape its byte, any other character its UTF-8. */
function percentDecoded(raw: string): Buffer {
  const parts = raw.replaceAll('+', ' ').split(/(%[0-9A-Fa-f]{2})/);
  return Buffer.concat(parts.map((part, i) => (i % 2 === 1 ? Buffer.of(parseInt(part.slice(1), 16)) : Buffer.from(part))));
}

/**
 * The query's pairs, split and decoded as URLSearchParams does (on `&`, empty fields
 * skipped, the name ending at the first `=`), each with whether its value is UTF-8: escapes
 * whose bytes are not decode to U+FFFD, which the value may also hold as sent (`%EF%BF%BD`),
 * so the bytes of each value are what tell.
 */
function queryPairs(queryString: string): { key: string; value: string; utf8: boolean }[] {
  const fields = (queryString.startsWith('?') ? queryString.slice(1) : queryString).split('&');
  return fields
    .filter((field) => field !== '')
    .map((field) => {
      const at = field.indexOf('=');
      const key = LENIENT_UTF8.decode(percentDecoded(at < 0 ? field : field.slice(0, at)));
      const bytes = percentDecoded(at < 0 ? '' : field.slice(at + 1));
      try {
        return { key, value: STRICT_UTF8.decode(bytes), utf8: true };
      } catch {
        return { key, value: LENIENT_UTF8.decode(bytes), utf8: false };
      }
    });
}

function validQuery<T extends object>(dto: DtoClass<T>, queryString: string, context?: object): T {
  const names = parameterNames(dto);
  const raw: Record<string, string> = {};
  const problems: string[] = [];
  const seen = new Set<string>();
  // Parameters written as arrays (`VisitTypes[]=MV`, `SvcBrandId[0]=5`, as some HTTP libraries
  // write lists): not ignored as unknown names, which would answer unfiltered data.
  const arrayForms = new Set<string>();
  for (const { key, value, utf8 } of queryPairs(queryString)) {
    const name = names.get(asciiLower(key));
    if (name === undefined) {
      const base = ARRAY_FORM.exec(key)?.[1];
      const named = base === undefined ? undefined : names.get(asciiLower(base));
      if (named !== undefined && !arrayForms.has(named)) {
        arrayForms.add(named);
        problems.push(`'${visibleName(key)}' is written as an array, which no parameter is: send '${named}' once (a list as one comma-separated value).`);
      }
      continue;
    }
    // Percent-escapes whose bytes are no UTF-8 would decode to U+FFFD: the value a message
    // would quote is then not the one sent, so the bytes themselves are what is refused.
    if (!utf8) {
      const problem = `'${name}' holds percent-escapes whose bytes are not UTF-8.`;
      if (!problems.includes(problem)) problems.push(problem);
      seen.add(name);
      continue;
    }
    if (seen.has(name)) {
      // An empty value counts as absent: beside a value it is no second one.
      if (value === '') continue;
      if (raw[name] === '') {
        raw[name] = value;
        continue;
      }
      if (!problems.includes(`'${name}' must be given only once.`)) problems.push(`'${name}' must be given only once.`);
      continue;
    }
    seen.add(name);
    raw[name] = value;
  }
  const instance = plainToInstance(dto, raw);
  if (context) Object.defineProperty(instance, QUERY_CONTEXT, { value: context, enumerable: false });
  const errors = validateSync(instance, { forbidUnknownValues: false });
  const order = [...names.values()].filter((name) => !arrayForms.has(name) && !problems.some((p) => p.startsWith(`'${name}'`)));
  problems.push(...firstMessages(errors, order));
  if (problems.length > 0) throw new ValidationProblem(problems);
  return instance;
}

/** Where the HTTP setup puts the settings query rules read (see setupApp). */
export const QUERY_CONTEXT_LOCAL = 'queryContext';

export function requestQueryContext(request: Request): object | undefined {
  return (request.app?.locals as Record<string, object> | undefined)?.[QUERY_CONTEXT_LOCAL];
}

/**
 * Publishes the DTO's parameters (their @ApiProperty metadata) as the operation's query
 * parameters in the contract: the same class documents and validates them.
 */
export function documentQuery(dto: Function, target: object, key: string | symbol): void {
  const descriptor = Object.getOwnPropertyDescriptor(target, key);
  if (!descriptor) return;
  const names = (Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES_ARRAY, dto.prototype as object) ?? []) as string[];
  for (const name of names.map((n) => n.replace(/^:/, ''))) {
    const meta = (Reflect.getMetadata(DECORATORS.API_MODEL_PROPERTIES, dto.prototype as object, name) ?? {}) as Record<string, unknown>;
    ApiQuery({ ...meta, name, required: meta.required !== false })(target, key, descriptor);
  }
}

/** The DTO class of the decorated parameter, from the emitted design types. */
export function parameterDto(target: object, key: string | symbol | undefined, index: number): DtoClass<object> {
  const types = Reflect.getMetadata('design:paramtypes', target, key as string) as DtoClass<object>[] | undefined;
  const dto = types?.[index];
  if (!dto) throw new Error(`the query parameter of ${String(key)} needs a DTO class type`);
  return dto;
}
