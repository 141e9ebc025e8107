import { applyDecorators, SetMetadata } from '@nestjs/common';
import { ApiExtension, ApiSecurity } from '@nestjs/swagger';
import { API_KEY_SCHEME, OAUTH_SCHEME } from '../common/openapi-names.js';
import type { ScopeName } from './scopes.js';

export const REQUIRED_SCOPE = 'results:requiredScope';

/** Declares the scope a route needs; the global guards enforce it and the contract lists it. */
export function RequiresScope(scope: ScopeName): MethodDecorator & ClassDecorator {
  return applyDecorators(
    SetMetadata(REQUIRED_SCOPE, scope),
    // One requirement naming both: the API key AND a token with the scope (two requirement
    // objects would mean either one suffices).
    ApiSecurity({ [API_KEY_SCHEME]: [], [OAUTH_SCHEME]: [scope] }),
    ApiExtension('x-required-scopes', [scope]),
  );
}
