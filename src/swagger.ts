import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { SCOPE_DESCRIPTIONS } from './auth/scopes.js';
import { API_KEY_SCHEME, OAUTH_SCHEME } from './common/openapi-names.js';
import type { AppConfig } from './config/app-config.js';

const RETRY_AFTER = {
  description: 'Seconds to wait before retrying.',
  schema: { type: 'integer', minimum: 1, example: 30 },
};

const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    description: 'The limits that apply (IETF draft-ietf-httpapi-ratelimit-headers): `"default";q=60;w=60` per API key, `"token";q=10;w=60` per client id on the token endpoint.',
    schema: { type: 'string', example: '"default";q=60;w=60' },
  },
  RateLimit: {
    description: 'What is left of each limit: `r` requests remaining, `t` seconds until the window resets.',
    schema: { type: 'string', example: '"default";r=59;t=42' },
  },
};

type Operation = { security?: unknown[]; responses?: Record<string, { headers?: Record<string, unknown> }> };

/**
 * What the decorators cannot say: public operations declare an empty security list, every
 * 429 and 503 documents its Retry-After header, and every rate-limited operation (all but
 * the health probes) documents the RateLimit headers on each of its responses.
 */
function complete(document: OpenAPIObject): OpenAPIObject {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const operation of Object.values(item as Record<string, Operation>)) {
      if (typeof operation !== 'object' || !operation.responses) continue;
      operation.security ??= [];
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers = { ...response.headers };
        // A body too large is refused while it is read, before the rate limiter runs.
        if (!path.startsWith('/health/') && status !== '413') Object.assign(headers, RATE_LIMIT_HEADERS);
        if (status === '429' || status === '503') headers['Retry-After'] = RETRY_AFTER;
        if (Object.keys(headers).length > 0) response.headers = headers;
      }
    }
  }
  return document;
}

/**
 * Swagger UI sends the OAuth2 token request itself; this adds the svc-api-key the user
 * entered in the Authorize dialog, which the token endpoint requires. Runs in the browser.
 */
const addApiKeyToTokenRequests = (request: { url: string; headers: Record<string, string> }) => {
  const ui = (globalThis as unknown as { ui?: { authSelectors: { authorized: () => { toJS: () => Record<string, { value?: string }> } } } }).ui;
  if (/\/connect\/token(\?|$)/.test(request.url) && ui) {
    const key = ui.authSelectors.authorized().toJS()['svc-api-key']?.value;
    if (key) request.headers['svc-api-key'] = key;
  }
  return request;
};

/**
 * Where the API is: the configured public address, or else the host the document was
 * fetched from (a relative server), so Swagger UI and generated clients call the address
 * they were opened at (localhost, 127.0.0.1, a pod address) rather than one named here.
 */
function serverUrl(config: AppConfig): string {
  return config.PUBLIC_BASE_URL ? config.baseUrl : '/';
}

/** The OpenAPI document, generated from the controllers and DTOs. */
export function buildOpenApi(app: INestApplication, config: AppConfig): OpenAPIObject {
  // Relative to the server (OpenAPI resolves relative URLs against it), so Swagger UI asks
  // the host it was opened at for a token: the CSP's connect-src 'self' allows only that.
  const tokenUrl = config.PUBLIC_BASE_URL ? `${config.baseUrl}/connect/token` : '/connect/token';
  const builder = new DocumentBuilder()
    .setTitle('Results service API')
    .setDescription(
      'Guest-experience results (scored visits), menus and dishes, and branch mappings for restaurant and ' +
        'hospitality groups. Every data request carries the `svc-api-key` header and an OAuth 2.0 ' +
        'client-credentials bearer token from `POST /connect/token`.',
    )
    .setVersion('1.0.0')
    .addServer(serverUrl(config))
    .addApiKey({ type: 'apiKey', in: 'header', name: 'svc-api-key', description: 'The API key issued with your credential.' }, API_KEY_SCHEME)
    .addOAuth2(
      {
        type: 'oauth2',
        description: 'Client-credentials access token from POST /connect/token (send the svc-api-key header too).',
        flows: { clientCredentials: { tokenUrl, scopes: { ...SCOPE_DESCRIPTIONS } } },
      },
      OAUTH_SCHEME,
    );
  return complete(
    SwaggerModule.createDocument(app, builder.build(), {
      operationIdFactory: (controller: string, method: string) => `${controller.replace(/Controller$/, '')}_${method}`,
    }),
  );
}

/** Swagger UI at /docs, the contract at /docs/openapi.json. */
export function setupSwagger(app: INestApplication, config: AppConfig): void {
  const document = buildOpenApi(app, config);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
    customSiteTitle: 'Results service API',
    swaggerOptions: {
      persistAuthorization: true,
      tryItOutEnabled: true,
      displayRequestDuration: true,
      requestInterceptor: addApiKeyToTokenRequests,
    },
  });
}
