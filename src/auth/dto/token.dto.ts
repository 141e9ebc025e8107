import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';
import { ALL_SCOPES } from '../scopes.js';

/** The longest value of each token form field; a longer one is an `invalid_request`. */
export const TOKEN_FORM_MAX_LENGTH = { client_id: 100, client_secret: 200, scope: 1000 } as const;

const scopeAlternatives = `(?:${ALL_SCOPES.map((s) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('|')})`;

/** A space-delimited list of the API's scopes (unknown scopes are an `invalid_scope`). */
export const SCOPE_LIST_PATTERN = `^ *${scopeAlternatives}(?: +${scopeAlternatives})* *$`;

export class TokenRequestDto {
  @ApiProperty({ enum: ['client_credentials'], example: 'client_credentials' })
  grant_type!: string;

  @ApiPropertyOptional({
    description: 'Required unless HTTP Basic is used.',
    example: 'svc_0a1b2c3d4e5f60718293',
    minLength: 1,
    maxLength: TOKEN_FORM_MAX_LENGTH.client_id,
  })
  client_id?: string;

  @ApiPropertyOptional({ description: 'Required unless HTTP Basic is used.', format: 'password', maxLength: TOKEN_FORM_MAX_LENGTH.client_secret })
  client_secret?: string;

  @ApiPropertyOptional({
    description: 'Space-delimited scopes; must include svc-results-api when given. Omitted: every assigned scope.',
    example: 'svc-results-api visits/standard.read',
    maxLength: TOKEN_FORM_MAX_LENGTH.scope,
    pattern: SCOPE_LIST_PATTERN,
  })
  scope?: string;
}

export class TokenResponseDto {
  @ApiProperty({ description: 'RFC 9068 JWT access token.' })
  access_token!: string;

  @ApiProperty({ type: 'integer', example: 3600, description: 'Seconds the token is valid: 3600.' })
  expires_in!: number;

  @ApiProperty({ enum: ['Bearer'] })
  token_type!: string;

  @ApiProperty({ example: 'svc-results-api visits/standard.read branches/standard.read' })
  scope!: string;
}

export class OAuthErrorDto {
  @ApiProperty({
    enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope', 'slow_down', 'temporarily_unavailable', 'server_error'],
  })
  error!: string;

  @ApiProperty({ example: 'Client authentication failed.' })
  error_description!: string;
}
