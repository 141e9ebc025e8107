import { NotFoundException, PreconditionFailedException, type INestApplication } from '@nestjs/common';
import { DocumentBuilder, SwaggerModule, type OpenAPIObject } from '@nestjs/swagger';
import type { NextFunction, Request, Response } from 'express';
import { apiKeyChallenge, basicChallenge, bearerChallenge } from './auth/challenges.js';
import { SCOPE_DESCRIPTIONS } from './auth/scopes.js';
import { API_KEY_SCHEME, OAUTH_SCHEME } from './common/openapi-names.js';
import { countOf, dayCount } from './common/clock.js';
import { ifMatchFailure, preconditionMembers } from './common/conditional-get.js';
import { dropRangeOfUncertainIfRange } from './common/if-range.js';
import { ownRequestId } from './common/shared-answer.js';
import { AppConfig } from './config/app-config.js';
import { imageTooLargeMessage } from './menus/image-inspector.js';
import { TOKEN_PATH } from './rate-limit/rate-limit.guard.js';
import { CHANGES_DEFAULT_TAKE } from './visits/dto/changes-query.dto.js';
import { WEBHOOK_EVENT_MODELS, WEBHOOKS_OPENAPI } from './webhooks/webhooks-openapi.js';

/** Every answer's id, which the logs keep: the caller's own X-Request-Id when it is a plain token, else a UUID. */
const REQUEST_ID_HEADER = {
  required: true,
  description: "The request's id, as the service's logs keep it: the request's own `X-Request-Id` when that is 1 to 128 letters, digits and `-_.:` (it is echoed), else a UUID. Quote it with the problem's `instance` when reporting an error.",
  schema: { type: 'string', maxLength: 128 },
};

/**
 * The id of a discovery document's answer, which shared caches keep and serve to everyone: always
 * one of its own, never the caller's (see src/common/shared-answer.ts). Named apart from
 * X-Request-Id in the contract's headers, as the response header is the same.
 */
const SHARED_REQUEST_ID = 'X-Request-Id.sharedAnswer';
const SHARED_REQUEST_ID_HEADER = {
  required: true,
  description:
    "The answer's id, as the service's logs keep it: a UUID of its own, never the request's `X-Request-Id` (shared caches keep this answer and serve it to everyone). Quote it with the problem's `instance` when reporting an error.",
  schema: { type: 'string', maxLength: 128 },
};

const RETRY_AFTER = {
  required: true,
  description: 'Seconds to wait before retrying.',
  schema: { type: 'integer', minimum: 1, example: 30 },
};

const RATE_LIMIT_HEADERS = {
  'RateLimit-Policy': {
    required: true,
    description: 'The limits that apply (IETF draft-ietf-httpapi-ratelimit-headers): `"default";q=60;w=60` per API key, `"token";q=10;w=60` per client id on the token endpoint (RATE_LIMIT_PER_MINUTE and TOKEN_RATE_LIMIT_PER_MINUTE: a running service\'s contract gives its own).',
    schema: { type: 'string', example: '"default";q=60;w=60' },
  },
  RateLimit: {
    required: true,
    description: 'What is left of each limit: `r` requests remaining, `t` seconds until the window resets.',
    schema: { type: 'string', example: '"default";r=59;t=42' },
  },
  'X-Rate-Limit-Limit': {
    required: true,
    description:
      'Requests allowed in the window of the limit closest to refusing (the one with the fewest remaining): ' +
      'the per-key limit, or on the token endpoint its per-client limit when that is closer. The same limit as ' +
      'the matching `RateLimit` item\'s `q`.',
    schema: { type: 'integer', minimum: 1, example: 60 },
  },
  'X-Rate-Limit-Remaining': {
    required: true,
    description: 'Requests left in that window (the `r` of the same limit in `RateLimit`).',
    schema: { type: 'integer', minimum: 0, example: 59 },
  },
  'X-Rate-Limit-Reset': {
    required: true,
    description: 'When that window ends and the count starts afresh, an ISO 8601 date-time in UTC (now plus the `t` of `RateLimit`).',
    schema: { type: 'string', format: 'date-time', example: '2026-11-22T20:31:00.000Z' },
  },
};

/** On a 403 only when the token lacks the endpoint's scope; a 403 for data outside the entitlements has none. */
const INSUFFICIENT_SCOPE = {
  required: false,
  description: 'With a token that lacks the endpoint\'s scope (RFC 6750 §3.1): `error="insufficient_scope"` and the `scope` the endpoint needs. Absent when the query asks for data outside the credential\'s entitlements.',
  schema: { type: 'string', example: bearerChallenge({ error: 'insufficient_scope', scope: 'visits/plus.read' }) },
};

const WWW_AUTHENTICATE = {
  required: true,
  description:
    `The challenge of the credential that failed: \`${apiKeyChallenge()}\` for the API key, ` +
    `RFC 6750 \`${bearerChallenge()}\` (with \`error="invalid_token"\` and a description for a token that was sent) ` +
    'for the access token.',
  schema: { type: 'string', example: bearerChallenge({ error: 'invalid_token', description: 'The access token has expired.' }) },
};

/** The token endpoint challenges only a failed API key or HTTP Basic authentication (RFC 6749 §5.2). */
const TOKEN_WWW_AUTHENTICATE = {
  required: false,
  description:
    `Sent when the svc-api-key failed (\`${apiKeyChallenge()}\`) or the client ` +
    `authenticated with HTTP Basic (\`${basicChallenge()}\`); not for client credentials in the form.`,
  schema: { type: 'string', example: basicChallenge() },
};

/** The name of the token endpoint's (optional) challenge among the contract's headers. */
const TOKEN_CHALLENGE = 'WWW-Authenticate.token';
const INSUFFICIENT_SCOPE_HEADER = 'WWW-Authenticate.insufficientScope';

const ref = (name: string) => ({ $ref: `#/components/headers/${name}` });

interface Schema {
  maximum?: number;
  default?: unknown;
  example?: unknown;
  'x-json-schema'?: { $ref: string };
  'x-max-bytes'?: number;
  properties?: Record<string, Schema>;
}
interface Parameter {
  name: string;
  in: string;
  schema?: Schema;
}
type Operation = {
  security?: unknown[];
  requestBody?: { content?: Record<string, unknown> };
  parameters?: Parameter[];
  responses?: Record<string, { headers?: Record<string, unknown> }>;
};

/**
 * What the decorators cannot say: public operations declare an empty security list, every
 * 401 documents its WWW-Authenticate challenge, every 429 and 503 its Retry-After header,
 * every rate-limited operation (all but the health probes and the discovery documents) the RateLimit headers on each of
 * its responses, and the limits that come from the configuration (the largest Take, the
 * largest image) are in the schemas.
 */
function complete(document: OpenAPIObject, config: AppConfig): OpenAPIObject {
  for (const [path, item] of Object.entries(document.paths)) {
    for (const operation of Object.values(item as Record<string, Operation>)) {
      if (typeof operation !== 'object' || !operation.responses) continue;
      operation.security ??= [];
      for (const parameter of operation.parameters ?? []) {
        if (parameter.in === 'query' && parameter.name === 'Take' && parameter.schema) {
          parameter.schema.maximum = config.VISITS_TAKE_MAX;
          // The feed's default Take is 500, or the largest Take when that is lower.
          if (typeof parameter.schema.default === 'number') parameter.schema.default = Math.min(parameter.schema.default, config.VISITS_TAKE_MAX);
          // Swagger UI fills the example in: one above the largest Take would be refused with a 400.
          if (typeof parameter.schema.example === 'number') parameter.schema.example = Math.min(parameter.schema.example, config.VISITS_TAKE_MAX);
        }
      }
      for (const [status, response] of Object.entries(operation.responses)) {
        const headers = { ...response.headers };
        // Headers over 16 KiB are refused by Node's parser, and an Expect other than
        // 100-continue as Node reads the head, before any of the service runs; a body too large
        // is refused after the rate limit has counted it (body-errors.ts).
        const beforeLimiter = status === '431' || status === '417';
        if (!path.startsWith('/health/') && !path.startsWith('/.well-known/') && !beforeLimiter) {
          for (const name of Object.keys(RATE_LIMIT_HEADERS)) headers[name] = ref(name);
        }
        if (status === '401') headers['WWW-Authenticate'] = ref(path === TOKEN_PATH ? TOKEN_CHALLENGE : 'WWW-Authenticate');
        if (status === '403') headers['WWW-Authenticate'] = ref(INSUFFICIENT_SCOPE_HEADER);
        if (status === '429' || status === '503') headers['Retry-After'] = ref('Retry-After');
        headers['X-Request-Id'] = ref(path.startsWith('/.well-known/') ? SHARED_REQUEST_ID : 'X-Request-Id');
        if (Object.keys(headers).length > 0) response.headers = headers;
      }
    }
  }
  // Each header is described once and referenced by every response that sends it.
  document.components = {
    ...document.components,
    headers: {
      ...document.components?.headers,
      ...RATE_LIMIT_HEADERS,
      'Retry-After': RETRY_AFTER,
      'X-Request-Id': REQUEST_ID_HEADER,
      [SHARED_REQUEST_ID]: SHARED_REQUEST_ID_HEADER,
      'WWW-Authenticate': WWW_AUTHENTICATE,
      [TOKEN_CHALLENGE]: TOKEN_WWW_AUTHENTICATE,
      [INSUFFICIENT_SCOPE_HEADER]: INSUFFICIENT_SCOPE,
    },
  };
  const form = (document.components?.schemas?.DishUploadDto as Schema | undefined)?.properties;
  if (form?.file) form.file['x-max-bytes'] = config.IMAGE_MAX_BYTES;
  // What the json part's text holds, for tools that read it (OpenAPI 3.0 has no contentSchema).
  if (form?.json) form.json['x-json-schema'] = { $ref: '#/components/schemas/DishInputDto' };
  return withConfiguredFigures(document, config);
}

/**
 * The figures the contract's text gives as the default settings' (a range of 31 days, 90 days
 * of changes, a Take of at most 1000 and 500 when omitted, the 413 example's 5242880 bytes, the
 * rate limits of 60 requests a minute per API key and 10 per client id on the token endpoint in
 * the RateLimit headers and the 429 example), as this service is configured: a partner reading
 * a deployment's contract reads its limits. With the defaults the text is the committed
 * contract's, word for word.
 */
function withConfiguredFigures(document: OpenAPIObject, config: AppConfig): OpenAPIObject {
  const perKey = config.RATE_LIMIT_PER_MINUTE;
  const figures: [string, string][] = [
    ['The range is at most 31 days (configurable).', `The range is at most ${dayCount(config.VISITS_MAX_RANGE_DAYS)} (configurable).`],
    ['At most CHANGES_RETENTION_DAYS (90) days ago.', `At most CHANGES_RETENTION_DAYS (${config.CHANGES_RETENTION_DAYS}) days ago.`],
    ['at most 1000 (configurable); 500 when omitted.', `at most ${config.VISITS_TAKE_MAX} (configurable); ${Math.min(CHANGES_DEFAULT_TAKE, config.VISITS_TAKE_MAX)} when omitted.`],
    [imageTooLargeMessage(DEFAULT_IMAGE_MAX_BYTES), imageTooLargeMessage(config.IMAGE_MAX_BYTES)],
    [`"default";q=${DEFAULT_LIMITS.RATE_LIMIT_PER_MINUTE};w=60`, `"default";q=${perKey};w=60`],
    [`"token";q=${DEFAULT_LIMITS.TOKEN_RATE_LIMIT_PER_MINUTE};w=60`, `"token";q=${config.TOKEN_RATE_LIMIT_PER_MINUTE};w=60`],
    [`"default";r=${DEFAULT_LIMITS.RATE_LIMIT_PER_MINUTE - 1};t=42`, `"default";r=${perKey - 1};t=42`],
    [`The rate limit of ${DEFAULT_LIMITS.RATE_LIMIT_PER_MINUTE} requests a minute`, `The rate limit of ${countOf(perKey, 'request')} a minute`],
  ];
  let text = JSON.stringify(document);
  for (const [committed, configured] of figures) text = text.split(JSON.stringify(committed).slice(1, -1)).join(JSON.stringify(configured).slice(1, -1));
  const configured = JSON.parse(text) as OpenAPIObject;
  // The examples of the limit closest to refusing, a number each: the per-key limit's.
  const headers = configured.components?.headers as Record<string, { schema?: { example?: unknown } }> | undefined;
  const limit = headers?.['X-Rate-Limit-Limit']?.schema;
  const remaining = headers?.['X-Rate-Limit-Remaining']?.schema;
  if (limit) limit.example = perKey;
  if (remaining) remaining.example = perKey - 1;
  return configured;
}

/** The default settings, which the decorators' examples are written with. */
const DEFAULT_LIMITS = new AppConfig();
/** IMAGE_MAX_BYTES's default, which the decorators' examples are written with. */
const DEFAULT_IMAGE_MAX_BYTES = DEFAULT_LIMITS.IMAGE_MAX_BYTES;

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
    // 3.1: the version that has `webhooks`, for the events the service sends to partners.
    .setOpenAPIVersion('3.1.0')
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
    SwaggerModule.createDocument(app, { ...builder.build(), webhooks: WEBHOOKS_OPENAPI }, {
      operationIdFactory: (controller: string, method: string) => `${controller.replace(/Controller$/, '')}_${method}`,
      extraModels: WEBHOOK_EVENT_MODELS,
    }),
    config,
  );
}

/**
 * The relative reference from `path` (under /docs, without it: `//x//y.js`) to that path with its
 * empty and `.` segments left out (`/docs/x/y.js`): one `..` for each folder the request's own
 * folder is below /docs/ (RFC 3986 §5.2.4 takes an empty segment for one, `.` for none), then
 * the segments kept.
 */
export function withoutEmptySegments(path: string): string {
  const folders = path.slice(1, path.lastIndexOf('/') + 1).split('/').slice(0, -1);
  const ups = folders.filter((segment) => segment !== '.').length;
  return `${'../'.repeat(ups)}${keptSegments(path).join('/')}`;
}

/** The segments of a path but the empty ones and `.`, which name no file. */
function keptSegments(path: string): string[] {
  return path.split('/').filter((segment) => segment !== '' && segment !== '.');
}

/** What ifMatchFailure needs to know of the tags under /docs: that they are weak. */
const WEAK_TAG = 'W/"docs"';

/**
 * What /docs serves: Swagger UI's page and the files it links, and the contract. The folder
 * the file server is given is swagger-ui-dist's whole package, which holds its package.json,
 * README, source maps, a demo page and an initializer that loads the Petstore example: none of
 * this service's, and each a 404 as any path no endpoint has.
 */
const DOCS_FILES = new Set([
  '/',
  '/index.html',
  '/openapi.json',
  '/openapi.yaml',
  '/swagger-ui-init.js',
  '/swagger-ui.css',
  '/swagger-ui-bundle.js',
  '/swagger-ui-standalone-preset.js',
  '/favicon-32x32.png',
  '/favicon-16x16.png',
]);

/** Whether a path under /docs (without it) is one of DOCS_FILES once its empty and `.` segments are left out. */
export function isDocsFile(path: string): boolean {
  const kept = keptSegments(path);
  // A file's name with a slash after it names no file (only the page, `/`, ends in one).
  return !(kept.length > 0 && path.endsWith('/')) && DOCS_FILES.has(`/${kept.join('/')}`);
}

/** Swagger UI at /docs, the contract at /docs/openapi.json. */
export function setupSwagger(app: INestApplication, config: AppConfig): void {
  // Swagger UI's page links its files relative to itself, and tells /docs from /docs/ by the
  // URL's last character: a query (/docs/?x=1) would make it link /docs/docs/… from /docs/.
  // /docs/index.html is served the page of /docs, whose links then miss by a folder: it is sent to /docs/.
  app.use('/docs/', (req: Request, res: Response, next: NextFunction) => {
    // Without a Cache-Control, the page, its init script and the contract were stored by shared
    // caches for their default time (Varnish's 120 s) and served to every partner with the
    // X-Request-Id echoed to the first, and a contract a deployment had changed. no-cache: a cache
    // may keep them, but asks each time (the files' ETags still answer 304). A problem sets its own.
    res.setHeader('Cache-Control', 'no-cache');
    if ((req.method === 'GET' || req.method === 'HEAD') && !isDocsFile(req.path)) {
      // Said as the service says any path no endpoint has (ProblemFilter), without the query.
      next(new NotFoundException(`Cannot ${req.method} ${req.baseUrl}${req.path}`));
      return;
    }
    if (req.path === '/index.html' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.redirect(301, './');
      return;
    }
    // An empty segment (/docs//, a doubled slash in a link) would be served swagger-ui-dist's own
    // page, a demo of another API: sent to the path without it, relative so that a proxy's
    // path prefix stays.
    if (req.path.includes('//') && !req.path.split('/').includes('..') && (req.method === 'GET' || req.method === 'HEAD')) {
      res.redirect(301, withoutEmptySegments(req.path));
      return;
    }
    if (req.path === '/' && req.originalUrl.includes('?')) req.originalUrl = req.originalUrl.slice(0, req.originalUrl.indexOf('?'));
    if (req.method === 'GET' || req.method === 'HEAD') {
      // A shared cache may keep these answers (no-cache) and serve them to everyone: no
      // caller's request id in them (see ownRequestId).
      ownRequestId(req, res);
      // Their tags are weak (the file server's and Express's): no If-Match but `*` holds by the
      // strong comparison it asks for (RFC 9110 §13.1.1); those servers compare weakly.
      const failure = ifMatchFailure(req.headers['if-match'], WEAK_TAG);
      if (failure !== null) {
        next(new PreconditionFailedException(failure));
        return;
      }
      // An If-None-Match that is no list of tags names none the client holds: the full answer,
      // If-Modified-Since not weighed beside it (those servers would find a tag in `abc, W/"…"`).
      const ifNoneMatch = req.headers['if-none-match'];
      if (ifNoneMatch !== undefined && preconditionMembers(ifNoneMatch) === null) {
        delete req.headers['if-none-match'];
        delete req.headers['if-modified-since'];
      }
      // A request's `no-cache` asks the caches on the way to revalidate, which a conditional
      // request is; those servers answered it in full instead of a 304 (RFC 9110 §13.2.1: an
      // origin evaluates the preconditions). It means nothing else to an origin.
      delete req.headers['cache-control'];
    }
    // The file server answers ranges; an If-Range it would hold by a weaker test than RFC 9110's must get the whole file.
    dropRangeOfUncertainIfRange(req);
    next();
  });
  // The contract is built when first asked for (Swagger UI's page, /docs/openapi.json), not by
  // every start (50-60 ms of scanning the routes on a quiet machine, for a replica, or a test's
  // application, that may never serve it).
  SwaggerModule.setup('docs', app, () => buildOpenApi(app, config), {
    jsonDocumentUrl: 'docs/openapi.json',
    yamlDocumentUrl: 'docs/openapi.yaml',
    customSiteTitle: 'Results service API',
    swaggerOptions: {
      persistAuthorization: true,
      // Not tryItOutEnabled: with it, swagger-ui opened GET forms with their inputs disabled
      // and took a second click on "Try it out" to enable them.
      displayRequestDuration: true,
      // Highlighting a response body runs on the page's one thread: a 1000-visit page held the
      // page for a minute and then failed to show (Maximum call stack size exceeded).
      syntaxHighlight: false,
      requestInterceptor: addApiKeyToTokenRequests,
    },
  });
}
