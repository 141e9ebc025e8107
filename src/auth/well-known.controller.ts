import type { IncomingMessage, ServerResponse } from 'node:http';
import { Controller, Get, Header, Req, Res } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { SkipThrottle } from '@nestjs/throttler';
import type { JWK } from 'jose';
import { ApiExpectationFailed, ApiHeadersTooLarge, ApiProblemResponse } from '../common/api-responses.js';
import { Public } from '../common/public.decorator.js';
import { ownRequestId } from '../common/shared-answer.js';
import { AppConfig } from '../config/app-config.js';
import { JWKS_MAX_AGE_SECONDS, KeyringService } from './keyring.service.js';
import { ALL_SCOPES } from './scopes.js';

const TEXT = { type: 'string' } as const;
const TEXTS = { type: 'array', items: TEXT } as const;

/** An RFC 7517 key set of public EC keys (P-256); keys may carry members beyond these. */
const JWKS_SCHEMA = {
  type: 'object',
  required: ['keys'],
  properties: {
    keys: {
      type: 'array',
      items: {
        type: 'object',
        required: ['kty', 'kid'],
        properties: { kty: { type: 'string', example: 'EC' }, crv: { type: 'string', example: 'P-256' }, x: TEXT, y: TEXT, kid: TEXT, use: { type: 'string', example: 'sig' }, alg: { type: 'string', example: 'ES256' } },
      },
    },
  },
};

/** RFC 8414 metadata as this service gives it. */
const METADATA_SCHEMA = {
  type: 'object',
  required: ['issuer', 'token_endpoint', 'jwks_uri', 'grant_types_supported', 'token_endpoint_auth_methods_supported', 'response_types_supported', 'scopes_supported'],
  properties: {
    issuer: TEXT,
    token_endpoint: TEXT,
    jwks_uri: TEXT,
    grant_types_supported: TEXTS,
    token_endpoint_auth_methods_supported: TEXTS,
    response_types_supported: TEXTS,
    scopes_supported: TEXTS,
    service_documentation: TEXT,
  },
};

/**
 * Discovery: RFC 8414 metadata and the public keys that verify access tokens. Not rate-limited,
 * as the health probes: two small documents cached for minutes, which a gateway must be able to
 * fetch when a token names a key it has not seen. Limited per address, a flood of forged tokens
 * through one gateway (each naming an unknown key, each making it fetch again) spent its
 * address's minute, and the gateway then refused the tokens of a key that had just begun to sign.
 */
@ApiTags('auth')
@Public()
@SkipThrottle()
@ApiHeadersTooLarge()
@ApiExpectationFailed()
@Controller('.well-known')
export class WellKnownController {
  constructor(
    private readonly keyring: KeyringService,
    private readonly config: AppConfig,
  ) {}

  @Get('jwks.json')
  // A rotated key is published this long before it signs (KeyringService.publishSeconds).
  @Header('Cache-Control', `public, max-age=${JWKS_MAX_AGE_SECONDS}`)
  @ApiOperation({ operationId: 'getJwks', summary: 'The JSON Web Key Set that verifies access tokens.' })
  @ApiOkResponse({ description: 'RFC 7517 key set; `kid` is the RFC 7638 thumbprint.', schema: JWKS_SCHEMA })
  @ApiProblemResponse(500, 'Internal error; quote the instance.')
  // The signing keys are kept in the database unless JWT_SIGNING_KEYS gives them.
  @ApiProblemResponse(503, 'The signing keys cannot be read now (the database is unavailable); retry after `Retry-After` seconds.')
  jwks(@Req() req: IncomingMessage, @Res({ passthrough: true }) res: ServerResponse): Promise<{ keys: JWK[] }> {
    // Shared caches keep it: no caller's request id in it (see ownRequestId).
    ownRequestId(req, res);
    return this.keyring.jwks();
  }

  @Get('oauth-authorization-server')
  @Header('Cache-Control', 'public, max-age=300')
  @ApiOperation({ operationId: 'getAuthorizationServerMetadata', summary: 'RFC 8414 authorization server metadata.' })
  @ApiOkResponse({ description: 'Issuer, token endpoint, JWKS address, grant types, authentication methods and scopes.', schema: METADATA_SCHEMA })
  metadata(@Req() req: IncomingMessage, @Res({ passthrough: true }) res: ServerResponse): Record<string, unknown> {
    ownRequestId(req, res);
    const base = this.config.baseUrl;
    return {
      issuer: base,
      token_endpoint: `${base}/connect/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      response_types_supported: [],
      scopes_supported: [...ALL_SCOPES],
      service_documentation: `${base}/docs`,
    };
  }
}
