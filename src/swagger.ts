import type { INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import { SCOPE_DESCRIPTIONS } from './auth/scopes.js';
import { API_KEY_SCHEME, OAUTH_SCHEME } from './common/openapi-names.js';
import type { AppConfig } from './config/app-config.js';


/** The OpenAPI document, generated from the controllers and DTOs. */
export function buildOpenApi(app: INestApplication, config: AppConfig): OpenAPIObject {
  const builder = new DocumentBuilder()
    .setTitle('Results service API')
    .setDescription(
      'Guest-experience results (scored visits), menus and dishes, and branch mappings for restaurant and ' +
        'hospitality groups. Every data request carries the `svc-api-key` header and an OAuth 2.0 ' +
        'client-credentials bearer token from `POST /connect/token`.',
    )
    .setVersion('1.0.0')
    .addServer(config.baseUrl)
    .addApiKey({ type: 'apiKey', in: 'header', name: 'svc-api-key', description: 'The API key issued with your credential.' }, API_KEY_SCHEME)
    .addOAuth2(
      {
        type: 'oauth2',
        description: 'Client-credentials access token from POST /connect/token (send the svc-api-key header too).',
        flows: { clientCredentials: { tokenUrl: `${config.baseUrl}/connect/token`, scopes: { ...SCOPE_DESCRIPTIONS } } },
      },
      OAUTH_SCHEME,
    );
  return SwaggerModule.createDocument(app, builder.build(), {
    operationIdFactory: (_controller: string, method: string) => method,
  });
}

/** Swagger UI at /docs, the contract at /docs/openapi.json. */
export function setupSwagger(app: INestApplication, config: AppConfig): void {
  const document = buildOpenApi(app, config);
  SwaggerModule.setup('docs', app, document, {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
    customSiteTitle: 'Results service API',
    swaggerOptions: { persistAuthorization: true },
  });
}
