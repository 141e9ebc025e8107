import { Module } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { PassportModule } from '@nestjs/passport';
import { ClientsModule } from '../clients/clients.module.js';
import { BodyErrorGuard } from '../common/body-errors.js';
import { KEY_OWNER, RateLimitGuard, TOKEN_LOCKOUT } from '../rate-limit/rate-limit.guard.js';
import { AuthCacheService } from './auth-cache.service.js';
import { AuthRepository } from './auth.repository.js';
import { CredentialsService } from './credentials.service.js';
import { ApiKeyGuard } from './guards/api-key.guard.js';
import { JwtAuthGuard } from './guards/jwt-auth.guard.js';
import { JwtStrategy } from './guards/jwt.strategy.js';
import { ScopeGuard } from './guards/scope.guard.js';
import { KeyringService } from './keyring.service.js';
import { TokenFailuresService } from './token-failures.service.js';
import { TokenLane } from './token-lane.js';
import { TokenController } from './token.controller.js';
import { TokenService } from './token.service.js';
import { VerifiedTokens } from './verified-tokens.js';
import { WellKnownController } from './well-known.controller.js';

/**
 * Credentials, the token endpoint and discovery, and the global guards, in this order:
 * rate limit, unreadable body, API key, bearer token, scope. Routes opt out of the last three
 * with @Public().
 */
@Module({
  imports: [ClientsModule, PassportModule],
  controllers: [TokenController, WellKnownController],
  providers: [
    AuthRepository,
    AuthCacheService,
    CredentialsService,
    KeyringService,
    TokenFailuresService,
    TokenService,
    TokenLane,
    JwtStrategy,
    VerifiedTokens,
    // The rate limits count by API key only when it is a live one, which the credentials' cache knows.
    { provide: KEY_OWNER, inject: [AuthCacheService], useFactory: (cache: AuthCacheService) => cache.keyOwner },
    // A 429 of the token endpoint says when a locked-out client may try again, if that is later than the window's end.
    { provide: TOKEN_LOCKOUT, inject: [TokenFailuresService], useFactory: (failures: TokenFailuresService) => (clientId: string) => failures.blockedFor(clientId) },
    // The rate limit comes first, so that refused requests count too.
    { provide: APP_GUARD, useClass: RateLimitGuard },
    // A body that could not be read is refused next, before the credentials (see keepingBodyErrors).
    { provide: APP_GUARD, useClass: BodyErrorGuard },
    { provide: APP_GUARD, useClass: ApiKeyGuard },
    { provide: APP_GUARD, useClass: JwtAuthGuard },
    { provide: APP_GUARD, useClass: ScopeGuard },
  ],
  exports: [CredentialsService, AuthRepository, KeyringService, AuthCacheService, VerifiedTokens, JwtStrategy, TokenLane],
})
export class AuthModule {}
