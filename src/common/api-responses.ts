import { applyDecorators } from '@nestjs/common';
import {
  ApiExtraModels,
  ApiHeader,
  ApiResponse,
  getSchemaPath,
  ApiProperty,
  ApiPropertyOptional,
} from '@nestjs/swagger';
import { IF_MATCH_FAILED } from './conditional-get.js';
import { BAD_REQUEST_DETAIL, statusTitle, TOO_LARGE_DETAIL } from './problem.js';

/** RFC 9457 problem document, as every error except the token endpoint's. */
export class ProblemDto {
  @ApiProperty({ example: 'Bad Request', description: 'The status phrase.' })
  title!: string;

  @ApiProperty({ type: 'integer', minimum: 400, maximum: 599, example: 400, description: 'The HTTP status code of the response.' })
  status!: number;

  @ApiProperty({ example: BAD_REQUEST_DETAIL, description: 'What went wrong, for people.' })
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

/** What a problem of each status says, in the words the service uses for it. */
const EXAMPLE_DETAILS: Record<number, string> = {
  400: BAD_REQUEST_DETAIL,
  401: 'An access token is required: send Authorization: Bearer <token>.',
  403: 'The credential is not entitled to SvcClientId 1002.',
  404: 'No resource exists at this address.',
  413: TOO_LARGE_DETAIL,
  429: 'The rate limit of 60 requests a minute is reached; retry after 42 seconds.',
  500: 'An internal error occurred. Quote the instance id when reporting it.',
  503: 'The database is unavailable; retry after the time in Retry-After.',
};

/** The broken rules of the visit endpoints' 400 example (each operation names its own, see ApiDataErrors). */
const VISITS_BAD_REQUEST = ["'SvcClientId' must not be empty.", "'Take' must be greater than '0'."];

/** An example problem body of the given status (`errors`: the list a 400 or 413 carries). */
export function problemExample(status: number, detail = EXAMPLE_DETAILS[status] ?? statusTitle(status), errors?: string[]): Record<string, unknown> {
  return {
    title: statusTitle(status),
    status,
    detail,
    instance: 'urn:svc:api:results:error:3f1c2a9e-8b7d-4c55-9a10-2f4e6d8b1c07',
    ...(errors ? { errors } : {}),
  };
}

/**
 * A problem+json response of the given status, with an example body of that status
 * (`detail`: the example's detail, when the status's usual one does not fit the operation;
 * `errors`: the example's list, which a 400 and a 413 carry).
 */
export function ApiProblemResponse(status: number, description: string, detail?: string, errors?: string[]): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiExtraModels(ProblemDto),
    ApiResponse({
      status,
      description,
      content: { 'application/problem+json': { schema: { $ref: getSchemaPath(ProblemDto) }, example: problemExample(status, detail, errors) } },
    }),
  );
}

/** The answers of a GET with a validator to its preconditions: If-None-Match and If-Match (RFC 9110 §13.1). */
export function ApiConditionalResponses(): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiHeader({ name: 'If-None-Match', required: false, description: 'ETags of representations the caller holds (or `*`): a 304 while one is current.', schema: { type: 'string', maxLength: 8192 } }),
    ApiHeader({ name: 'If-Match', required: false, description: 'ETags the representation must have (or `*`): a 412 when it has none of them; a weak ETag never matches.', schema: { type: 'string', maxLength: 8192 } }),
    ApiResponse({
      status: 304,
      description: 'Not modified: the If-None-Match ETag is current.',
      headers: { ETag: { description: 'The current ETag, the one If-None-Match named.', schema: { type: 'string' } } },
    }),
    ApiProblemResponse(412, 'If-Match was sent and names no current representation (a weak ETag never matches it).', IF_MATCH_FAILED),
  );
}

/**
 * The error responses every data endpoint can give; `badRequest`: rules of the operation its
 * 400 example breaks; `unavailable`: what its 503 means, when it has causes of its own.
 */
export function ApiDataErrors(
  badRequest: string[] = VISITS_BAD_REQUEST,
  unavailable = 'Temporarily unavailable; retry after `Retry-After` seconds.',
): MethodDecorator & ClassDecorator {
  return applyDecorators(
    ApiProblemResponse(400, 'A parameter breaks a rule; `errors` lists each.', undefined, badRequest),
    ApiProblemResponse(401, 'svc-api-key or access token missing, invalid, expired or revoked; `WWW-Authenticate` says which.'),
    ApiProblemResponse(403, 'The token lacks the scope, or the query asks for data the credential is not entitled to.'),
    ApiProblemResponse(429, 'Rate limit reached; retry after `Retry-After` seconds.'),
    ApiProblemResponse(500, 'Internal error; quote the instance.'),
    ApiProblemResponse(503, unavailable),
  );
}

/**
 * What every operation can answer before it is routed: request line and headers over 16 KiB
 * (Node's parser refuses them; see client-errors.ts). For a class, so no operation lacks it.
 */
export function ApiHeadersTooLarge(): MethodDecorator & ClassDecorator {
  return ApiProblemResponse(431, 'The request line and headers are larger than 16 KiB; the connection closes.');
}

/** An Expect other than 100-continue (RFC 9110 §10.1.1), refused before any operation: for a class, as ApiHeadersTooLarge. */
export const EXPECTATION_FAILED = 'An `Expect` other than `100-continue`, which is the only expectation met; the connection closes.';

export function ApiExpectationFailed(): MethodDecorator & ClassDecorator {
  return ApiProblemResponse(417, EXPECTATION_FAILED, "The expectation 'foo' cannot be met; only 100-continue is supported.");
}
