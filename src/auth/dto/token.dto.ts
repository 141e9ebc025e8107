import { ApiProperty, ApiPropertyOptional } from '@nestjs/swagger';

export class TokenRequestDto {
  @ApiProperty({ enum: ['client_credentials'], example: 'client_credentials' })
  grant_type!: string;

  @ApiPropertyOptional({ description: 'Required unless HTTP Basic is used.', example: 'svc_0a1b2c3d4e5f60718293' })
  client_id?: string;

  @ApiPropertyOptional({ description: 'Required unless HTTP Basic is used.', format: 'password' })
  client_secret?: string;

  @ApiPropertyOptional({
    description: 'Space-delimited scopes; must include svc-results-api when given. Omitted: every assigned scope.',
    example: 'svc-results-api visits/standard.read',
  })
  scope?: string;
}

export class TokenResponseDto {
  @ApiProperty({ description: 'RFC 9068 JWT access token.' })
  access_token!: string;

  @ApiProperty({ example: 3600 })
  expires_in!: number;

  @ApiProperty({ enum: ['Bearer'] })
  token_type!: string;

  @ApiProperty({ example: 'svc-results-api visits/standard.read branches/standard.read' })
  scope!: string;
}

export class OAuthErrorDto {
  @ApiProperty({
    enum: ['invalid_request', 'invalid_client', 'unsupported_grant_type', 'invalid_scope', 'slow_down'],
  })
  error!: string;

  @ApiProperty({ example: 'Client authentication failed.' })
  error_description!: string;
}
