import { Controller, Get } from '@nestjs/common';
import { ExecutionContextHost } from '@nestjs/core/helpers/execution-context-host.js';
import type { AuthenticatedRequest } from '../../src/auth/principal.js';
import { RequiresScope } from '../../src/auth/requires-scope.decorator.js';
import { Scope } from '../../src/auth/scopes.js';
import { Public } from '../../src/common/public.decorator.js';

/** Routes with the metadata the global guards read, as the feature controllers declare it. */
@Controller('guarded')
export class GuardedRoutes {
  @Public()
  @Get('public')
  open(): void {}

  @RequiresScope(Scope.Branches)
  @Get('branches')
  branches(): void {}

  @Get('any')
  unscoped(): void {}
}

export type Route = 'open' | 'branches' | 'unscoped';

/**
 * What an Express response is to the guards: headers set or appended, and `locals`. Headers
 * are kept by lower-case name, appended values in order.
 */
export class RecordedResponse {
  readonly locals: Record<string, unknown> = {};
  readonly headers = new Map<string, string[]>();

  setHeader(name: string, value: string): this {
    this.headers.set(name.toLowerCase(), [value]);
    return this;
  }

  appendHeader(name: string, value: string): this {
    const key = name.toLowerCase();
    this.headers.set(key, [...(this.headers.get(key) ?? []), value]);
    return this;
  }

  header(name: string): string | undefined {
    return this.headers.get(name.toLowerCase())?.join(', ');
  }
}

export interface GuardCall {
  request: AuthenticatedRequest;
  response: RecordedResponse;
  context: ExecutionContextHost;
}

/** The execution context Nest gives a guard for an HTTP request to one of GuardedRoutes. */
export function guardCall(route: Route, request: Partial<AuthenticatedRequest> = {}): GuardCall {
  const req = { headers: {}, path: `/guarded/${route}`, ip: '127.0.0.1', ...request } as AuthenticatedRequest;
  const response = new RecordedResponse();
  const handler = GuardedRoutes.prototype[route];
  const context = new ExecutionContextHost([req, response, () => undefined], GuardedRoutes, handler);
  context.setType('http');
  return { request: req, response, context };
}

/** The error a guard refused with (the test fails when it let the request through). */
export async function refusalOf(check: () => unknown): Promise<unknown> {
  try {
    await check();
  } catch (error) {
    return error;
  }
  throw new Error('the guard let the request through');
}
