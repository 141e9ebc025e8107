import { applyDecorators } from '@nestjs/common';
import {
  ApiBadRequestResponse,
  ApiForbiddenResponse,
  ApiInternalServerErrorResponse,
  ApiProperty,
  ApiPropertyOptional,
  ApiServiceUnavailableResponse,
  ApiTooManyRequestsResponse,
  ApiUnauthorizedResponse,
} from '@nestjs/swagger';

/** RFC 9457 problem document, as every error except the token endpoint's. */
export class ProblemDto {
  @ApiProperty({ example: 'Bad Request', description: 'The status phrase.' })
  title!: string;

  @ApiProperty({ example: 400 })
  status!: number;

  @ApiProperty({ example: "The request could not be processed; see 'errors' for each rule it broke." })
  detail!: string;

  @ApiProperty({
    example: 'urn:svc:api:results:error:3f1c2a9e-8b7d-4c55-9a10-2f4e6d8b1c07',
    pattern: '^urn:svc:api:results:error:[0-9a-f-]{36}$',
    description: 'Quote it when reporting a problem; it is logged with the request.',
  })
  instance!: string;

  @ApiPropertyOptional({
    type: [String],
    description: '400 only: one message per violated rule.',
    example: ["'SvcClientId' must not be empty."],
  })
  errors?: string[];
}

/** The error responses every data endpoint can give. */
export function ApiDataErrors(): MethodDecorator & ClassDecorator {
  const problem = { type: ProblemDto };
  return applyDecorators(
    ApiBadRequestResponse({ ...problem, description: 'A parameter breaks a rule; `errors` lists each.' }),
    ApiUnauthorizedResponse({ ...problem, description: 'svc-api-key or access token missing, invalid or revoked.' }),
    ApiForbiddenResponse({ ...problem, description: 'The token lacks the scope, or the query asks for data the credential is not entitled to.' }),
    ApiTooManyRequestsResponse({ ...problem, description: 'Rate limit reached; retry after `Retry-After` seconds.' }),
    ApiInternalServerErrorResponse({ ...problem, description: 'Internal error; quote the instance.' }),
    ApiServiceUnavailableResponse({ ...problem, description: 'Temporarily unavailable; retry after `Retry-After` seconds.' }),
  );
}
