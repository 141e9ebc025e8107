import { applyDecorators } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiResponse,
  getSchemaPath,
  ApiProperty,
  ApiPropertyOptional,
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
    description: '400: one message per violated rule; 413: the limit the body broke.',
    example: ["'SvcClientId' must not be empty."],
  })
  errors?: string[];
}

/** A problem+json response of the given status. */
export function ApiProblemResponse(status: number, description: string): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(ProblemDto),
    ApiResponse({
      status,
      description,
      content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemDto) } } },
    }),
  );
}

/** The error responses every data endpoint can give. */
export function ApiDataErrors(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiProblemResponse(400, 'A parameter breaks a rule; `errors` lists each.'),
    ApiProblemResponse(401, 'svc-api-key or access token missing, invalid or revoked; `WWW-Authenticate` says which.'),
    ApiProblemResponse(403, 'The token lacks the scope, or the query asks for data the credential is not entitled to.'),
    ApiProblemResponse(429, 'Rate limit reached; retry after `Retry-After` seconds.'),
    ApiProblemResponse(500, 'Internal error; quote the instance.'),
    ApiProblemResponse(503, 'Temporarily unavailable; retry after `Retry-After` seconds.'),
  );
}
