import { applyDecorators, Body, Controller, Headers, HttpCode, Post, Req, Res, UseFilters } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiExtraModels, ApiOkResponse, ApiOperation, ApiResponse, ApiSecurity, ApiTags, getSchemaPath } from '@nestjs/swagger';
import type { Request, Response } from 'express';
import { namesForm } from '../common/lane.js';
import { API_KEY_SCHEME } from '../common/openapi-names.js';
import { Public } from '../common/public.decorator.js';
import { OAuthErrorDto, TokenRequestDto, TokenResponseDto } from './dto/token.dto.js';
import { FORM_DESCRIPTIONS, NO_STORE_HEADERS, OAuthErrorFilter, OAuthException } from '../common/oauth-error.js';
import { sentByScript, TokenService, type TokenResponse } from './token.service.js';
import { ApiHeadersTooLarge, EXPECTATION_FAILED } from '../common/api-responses.js';

/** An OAuth error response (RFC 6749 §5.2) of the token endpoint, with an example body of its status. */
function ApiOAuthErrorResponse(status: number, description: string, example: OAuthErrorDto): MethodDecorator {
  return applyDecorators(
    ApiExtraModels(OAuthErrorDto),
    ApiResponse({ status, description, content: { 'application/json': { schema: { $ref: getSchemaPath(OAuthErrorDto) }, example } } }),
  );
}

@ApiTags('auth')
@Public()
// Every answer of the token endpoint is OAuth JSON with no-store, whatever refused the request.
@UseFilters(OAuthErrorFilter)
@ApiHeadersTooLarge()
@Controller('connect')
export class TokenController {
  constructor(private readonly tokens: TokenService) {}

  @Post('token')
  @HttpCode(200)
  @ApiOperation({
    operationId: 'createToken',
    summary: 'Get an access token (OAuth 2.0 client credentials).',
    description:
      'RFC 6749 §4.4. Client authentication by `client_id` and `client_secret` in the form body ' +
      '(client_secret_post) or by HTTP Basic (client_secret_basic), not both. Without `scope` the token ' +
      'carries every scope assigned to the client; a supplied `scope` must include `svc-results-api`. ' +
      'The token is an RFC 9068 JWT valid for 3600 seconds.',
  })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({ type: TokenRequestDto })
  // The API key only: the token endpoint is where the bearer token comes from.
  @ApiSecurity(API_KEY_SCHEME)
  @ApiOkResponse({ type: TokenResponseDto, description: 'The access token. `Cache-Control: no-store`.' })
  @ApiOAuthErrorResponse(400, '`invalid_request`, `unsupported_grant_type` or `invalid_scope`.', {
    error: 'invalid_request',
    error_description: "The parameter 'grant_type' is required.",
  })
  @ApiOAuthErrorResponse(401, '`invalid_client`: bad client credentials or svc-api-key; `WWW-Authenticate` names the scheme.', {
    error: 'invalid_client',
    error_description: 'Client authentication failed.',
  })
  @ApiOAuthErrorResponse(429, '`slow_down`: too many requests, or too many failed ones, for this client id.', {
    error: 'slow_down',
    error_description: 'Too many token requests for this client; retry after 42 seconds.',
  })
  @ApiOAuthErrorResponse(413, '`invalid_request`: the form is larger than the service accepts (16 KiB).', {
    error: 'invalid_request',
    error_description: FORM_DESCRIPTIONS[413],
  })
  @ApiOAuthErrorResponse(415, '`invalid_request`: the form names a charset other than utf-8 or iso-8859-1.', {
    error: 'invalid_request',
    error_description: FORM_DESCRIPTIONS[415],
  })
  @ApiOAuthErrorResponse(417, `\`invalid_request\`: ${EXPECTATION_FAILED}`, {
    error: 'invalid_request',
    error_description: "The expectation 'foo' cannot be met; only 100-continue is supported.",
  })
  @ApiOAuthErrorResponse(503, '`temporarily_unavailable`: the credentials cannot be read now; retry after `Retry-After` seconds.', {
    error: 'temporarily_unavailable',
    error_description: 'The database is unavailable; retry after the time in Retry-After.',
  })
  @ApiOAuthErrorResponse(500, '`server_error`: an internal error.', {
    error: 'server_error',
    error_description: 'An internal error occurred. Quote the instance id when reporting it.',
  })
  async token(
    @Req() req: Request,
    @Res({ passthrough: true }) res: Response,
    @Headers('svc-api-key') apiKey: string | undefined,
    @Headers('authorization') authorization: string | undefined,
    @Body() body: unknown,
  ): Promise<TokenResponse> {
    for (const [name, value] of Object.entries(NO_STORE_HEADERS)) res.setHeader(name, value);
    if (!namesForm(req.headers['content-type'])) {
      throw new OAuthException('invalid_request', 'The request body must be application/x-www-form-urlencoded.');
    }
    const form = typeof body === 'object' && body !== null ? (body as Record<string, unknown>) : {};
    return this.tokens.issue({ apiKey, authorization, form, fromScript: sentByScript(req.headers) });
  }
}
