import { readFileSync } from 'node:fs';
import { STATUS_CODES } from 'node:http';
import { DishesQueryDto, MenusQueryDto } from '../../src/menus/dto/menus-query.dto.js';
import { VisitsQueryDto } from '../../src/visits/dto/visits-query.dto.js';
import { BAD_REQUEST_DETAIL, TOO_LARGE_DETAIL, ValidationProblem } from '../../src/common/problem.js';
import { parseQuery, type DtoClass } from '../../src/common/query-params.js';
import { queryContext } from '../helpers/query-context.js';
import { loadConfig } from '../../src/config/app-config.js';

type Schema = Record<string, unknown> & { type?: string; $ref?: string; properties?: Record<string, Schema>; items?: Schema };
interface Parameter {
  name: string;
  in: string;
  required?: boolean;
  schema?: Schema;
}
interface Response {
  description: string;
  headers?: Record<string, unknown>;
  content?: Record<string, { schema?: Schema; example?: Record<string, unknown> }>;
}
interface Operation {
  operationId: string;
  security?: Record<string, string[]>[];
  parameters?: Parameter[];
  requestBody?: { content: Record<string, { schema: Schema }> };
  responses: Record<string, Response>;
  'x-required-scopes'?: string[];
}
interface Contract {
  servers: { url: string }[];
  paths: Record<string, Record<string, Operation>>;
  components: {
    schemas: Record<string, Schema>;
    headers: Record<string, { required?: boolean; schema?: Schema }>;
    securitySchemes: Record<string, { flows?: { clientCredentials?: { tokenUrl: string } } }>;
  };
}

/** The committed contract, as partners and generators read it. */
const contract = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8')) as Contract;
/** The settings the committed contract is generated with: the defaults. */
const defaults = loadConfig({});

const operations = Object.entries(contract.paths).flatMap(([path, item]) =>
  Object.entries(item).map(([method, operation]) => ({ where: `${method.toUpperCase()} ${path}`, path, operation })),
);
const isPublic = (path: string): boolean => path.startsWith('/health/') || path.startsWith('/.well-known/');
/** The response headers of a response, each through its `$ref` to the contract's headers. */
const headersOf = (response: Response): Record<string, { required?: boolean; schema?: Schema }> =>
  Object.fromEntries(
    Object.entries(response.headers ?? {}).map(([name, header]) => {
      const { $ref } = header as { $ref?: string };
      return [name, $ref ? contract.components.headers[$ref.replace('#/components/headers/', '')] : (header as { required?: boolean })];
    }),
  );
const resolve = (schema: Schema): Schema =>
  schema.$ref ? contract.components.schemas[schema.$ref.replace('#/components/schemas/', '')] : schema;

describe('the committed contract (openapi/openapi.json) says what the API does', () => {
  it('lists the servers relative to the document, and a token URL on the same host', () => {
    expect(contract.servers).toEqual([{ url: '/' }]);
    const tokenUrl = contract.components.securitySchemes.oauth2?.flows?.clientCredentials?.tokenUrl;
    expect(tokenUrl).toBe('/connect/token');
    expect(JSON.stringify(contract)).not.toContain('http://localhost');
  });

  it('requires the API key AND the scoped token together on every data operation, the API key alone for a token', () => {
    const data = operations.filter(({ path }) => !isPublic(path) && path !== '/connect/token');
    expect(data.map(({ where }) => where).sort()).toEqual([
      'GET /branches',
      'GET /menus',
      'GET /menus/dishes',
      'GET /menus/dishes/images/{imageId}',
      'GET /visits/plus',
      'GET /visits/plus/changes',
      'GET /visits/standard',
      'GET /visits/standard/changes',
      'POST /menus/dishes',
    ]);
    for (const { where, operation } of data) {
      const scopes = operation['x-required-scopes'];
      expect({ where, scopes: scopes?.length }).toEqual({ where, scopes: 1 });
      // One requirement object: both schemes must be satisfied (two objects would mean either).
      expect({ where, security: operation.security }).toEqual({ where, security: [{ 'svc-api-key': [], oauth2: scopes }] });
    }
    expect(contract.paths['/connect/token'].post.security).toEqual([{ 'svc-api-key': [] }]);
    for (const { where, path, operation } of operations.filter((o) => isPublic(o.path))) {
      expect({ where, path, security: operation.security }).toEqual({ where, path, security: [] });
    }
  });

  it('gives every error response an example body of its own status', () => {
    let checked = 0;
    for (const { where, operation } of operations) {
      for (const [code, response] of Object.entries(operation.responses).filter(([c]) => Number(c) >= 400)) {
        const status = Number(code);
        const [[type, media]] = Object.entries(response.content ?? {}) as [[string, { example?: Record<string, unknown> }]];
        const at = `${where} -> ${code}`;
        expect({ at, example: media.example !== undefined }).toEqual({ at, example: true });
        const example = media.example!;
        if (type === 'application/problem+json') {
          expect({ at, status: example.status, title: example.title }).toEqual({ at, status, title: STATUS_CODES[status] });
          expect(example.instance).toMatch(/^urn:svc:api:results:error:[0-9a-f-]{36}$/);
          if (status === 400) {
            expect({ at, detail: example.detail }).toEqual({ at, detail: BAD_REQUEST_DETAIL });
            expect((example.errors as string[]).length).toBeGreaterThan(0);
            // Rules of the operation's own parameters: no Take where the operation takes none.
            if ((example.errors as string[]).some((e) => e.startsWith("'Take'"))) expect({ at, take: (operation.parameters ?? []).some((p) => p.name === 'Take') }).toEqual({ at, take: true });
          } else if (status === 413) {
            // The limit the body broke, as the service says it.
            expect({ at, detail: example.detail, errors: example.errors }).toEqual({ at, detail: TOO_LARGE_DETAIL, errors: [expect.stringMatching(/^The image must be at most \d+ bytes/)] });
          } else {
            expect({ at, detail: example.detail, errors: example.errors }).toEqual({ at, detail: expect.any(String), errors: undefined });
            expect({ at, detail: example.detail }).not.toEqual({ at, detail: BAD_REQUEST_DETAIL });
          }
          if (status === 401) expect(example.detail).toMatch(/access token|svc-api-key|authenticat/i);
          if (status === 403) expect(example.detail).toMatch(/not entitled|scope/);
          if (status === 429) expect(example.detail).toMatch(/rate limit/i);
          if (status === 503) expect(example.detail).toMatch(/unavailable|not ready/i);
        } else {
          // The token endpoint's OAuth errors (RFC 6749 §5.2): the error code of the status.
          expect(type).toBe('application/json');
          const codes: Record<number, string[]> = {
            400: ['invalid_request', 'unsupported_grant_type', 'invalid_scope'],
            401: ['invalid_client'],
            413: ['invalid_request'],
            415: ['invalid_request'],
            417: ['invalid_request'],
            429: ['slow_down'],
            500: ['server_error'],
            503: ['temporarily_unavailable'],
          };
          expect({ at, error: codes[status]?.includes(example.error as string) }).toEqual({ at, error: true });
        }
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
  });

  it('documents WWW-Authenticate on every 401 and Retry-After on every 429 and 503', () => {
    for (const { where, operation } of operations) {
      for (const [code, response] of Object.entries(operation.responses)) {
        const headers = Object.keys(response.headers ?? {});
        const at = `${where} -> ${code}`;
        if (code === '401') {
          expect({ at, headers }).toEqual({ at, headers: expect.arrayContaining(['WWW-Authenticate']) });
          // Always sent by the data endpoints; by the token endpoint only for a failed API key or Basic authentication.
          const required = headersOf(response)['WWW-Authenticate'].required;
          expect({ at, required }).toEqual({ at, required: where !== 'POST /connect/token' });
        }
        if (code === '429' || code === '503') expect({ at, headers }).toEqual({ at, headers: expect.arrayContaining(['Retry-After']) });
      }
    }
  });

  it("documents X-Request-Id on every response: the caller's own echoed, but for the discovery documents, which always get a generated one", () => {
    let discovery = 0;
    for (const { where, path, operation } of operations) {
      for (const [code, response] of Object.entries(operation.responses)) {
        const at = `${where} -> ${code}`;
        const { description } = headersOf(response)['X-Request-Id'] as { description?: string };
        // A shared cache keeps a discovery document, and serves its headers to everyone (src/common/shared-answer.ts).
        const shared = path.startsWith('/.well-known/');
        if (shared) discovery++;
        expect({ at, echoed: /echoed/.test(description ?? '') }).toEqual({ at, echoed: !shared });
        expect({ at, generated: /UUID/.test(description ?? '') }).toEqual({ at, generated: true });
      }
    }
    expect(discovery).toBeGreaterThanOrEqual(2);
  });

  it('documents the rate-limit headers, IETF and X-Rate-Limit-*, on every rate-limited response', () => {
    const names = ['RateLimit', 'RateLimit-Policy', 'X-Rate-Limit-Limit', 'X-Rate-Limit-Remaining', 'X-Rate-Limit-Reset'];
    let checked = 0;
    // The health probes and the discovery documents are not limited.
    for (const { where, path, operation } of operations.filter((o) => !o.path.startsWith('/health/') && !o.path.startsWith('/.well-known/'))) {
      // A body too large is refused while it is read, headers too large and an Expect not met as Node reads the head, before the rate limiter.
      for (const [code, response] of Object.entries(operation.responses).filter(([c]) => !['413', '417', '431'].includes(c))) {
        const at = `${where} -> ${code}`;
        const headers = headersOf(response);
        expect({ at, path, documented: names.filter((n) => headers[n]?.required === true) }).toEqual({ at, path, documented: names });
        expect(headers['X-Rate-Limit-Reset'].schema).toMatchObject({ type: 'string', format: 'date-time' });
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
    // And none is promised where the limiter never runs: the probes, the discovery documents.
    for (const { where, operation } of operations.filter((o) => o.path.startsWith('/health/') || o.path.startsWith('/.well-known/'))) {
      for (const [code, response] of Object.entries(operation.responses)) {
        expect({ where, code, documented: names.filter((n) => headersOf(response)[n] !== undefined) }).toEqual({ where, code, documented: [] });
      }
    }
    for (const { where, operation } of operations) {
      // Every operation documents both, and neither with rate-limit headers.
      for (const code of ['417', '431']) {
        const early = operation.responses[code];
        expect({ where, code, documented: early && names.filter((n) => headersOf(early)[n] !== undefined) }).toEqual({ where, code, documented: [] });
      }
    }
  });

  it('puts every bound of every parameter and form field in its schema', () => {
    const bounded = (at: string, schema: Schema): void => {
      if (schema.type === 'integer') {
        expect({ at, minimum: typeof schema.minimum, maximum: typeof schema.maximum }).toEqual({ at, minimum: 'number', maximum: 'number' });
      } else if (schema.type === 'string') {
        // A file's bound is its bytes (x-max-bytes), which maxLength, a count of characters, is not.
        const bounds = [schema.format === 'binary' ? 'x-max-bytes' : 'maxLength', 'pattern', 'enum'].filter((k) => schema[k] !== undefined);
        expect({ at, bounded: bounds.length > 0 }).toEqual({ at, bounded: true });
      } else if (schema.type === 'array') {
        expect({ at, maxItems: typeof schema.maxItems }).toEqual({ at, maxItems: 'number' });
        bounded(`${at}[]`, schema.items!);
      } else {
        throw new Error(`${at}: a parameter of type ${String(schema.type)}`);
      }
    };
    for (const { where, operation } of operations) {
      for (const parameter of operation.parameters ?? []) bounded(`${where} ${parameter.name}`, parameter.schema!);
      for (const [type, media] of Object.entries(operation.requestBody?.content ?? {})) {
        for (const [name, property] of Object.entries(resolve(media.schema).properties ?? {})) bounded(`${where} ${type} ${name}`, property);
      }
    }

    const visits = contract.paths['/visits/standard'].get.parameters!;
    const schema = (name: string): Schema => visits.find((p) => p.name === name)!.schema!;
    expect(schema('Take')).toMatchObject({ type: 'integer', minimum: 1, maximum: defaults.VISITS_TAKE_MAX });
    expect(schema('Skip')).toMatchObject({ type: 'integer', minimum: 0 });
    expect(schema('SvcClientId')).toMatchObject({ type: 'integer', minimum: 1 });
    expect(schema('SvcBrandId')).toMatchObject({ type: 'integer', minimum: 1 });
    expect(schema('FromDate')).toMatchObject({ type: 'string', format: 'date' });
    expect(schema('ToDate')).toMatchObject({ type: 'string', format: 'date' });
    const visitTypes = new RegExp(schema('VisitTypes').pattern as string);
    expect(['MV', 'MV,OF', 'mv,of,ta'].filter((v) => visitTypes.test(v))).toEqual(['MV', 'MV,OF', 'mv,of,ta']);
    expect(['M', 'MVX', 'MV,', 'M1', 'MV;OF', ''].filter((v) => visitTypes.test(v))).toEqual([]);
    const upload = resolve(contract.paths['/menus/dishes'].post.requestBody!.content['multipart/form-data'].schema);
    expect(upload.properties!.file).toMatchObject({ format: 'binary', 'x-max-bytes': defaults.IMAGE_MAX_BYTES });
    expect(upload.properties!.file).not.toHaveProperty('maxLength');
    // The json part: 64 KiB of UTF-8, so never more characters than that (and no fewer refused).
    expect(upload.properties!.json).toMatchObject({ type: 'string', minLength: 2, maxLength: 65536 });
  });

  /** What the service's query rules say of a value: null when it passes, else the messages. */
  function verdict<T extends object>(dto: DtoClass<T>, query: Record<string, string>): string[] | null {
    const context = queryContext({
      takeMax: defaults.VISITS_TAKE_MAX,
      maxRangeDays: defaults.VISITS_MAX_RANGE_DAYS,
      zone: defaults.RESULTS_TIMEZONE,
      changesRetentionDays: defaults.CHANGES_RETENTION_DAYS,
    });
    try {
      parseQuery(dto, new URLSearchParams(query).toString(), context);
      return null;
    } catch (error) {
      if (error instanceof ValidationProblem) return error.errors ?? [];
      throw error;
    }
  }

  it('states the bounds the service enforces: a value at a bound passes, one past it is refused', () => {
    const valid: Record<string, Record<string, string>> = {
      '/visits/standard': { SvcClientId: '1001', FromDate: '2026-11-01', ToDate: '2026-11-02', Skip: '0', Take: '10' },
      '/menus': { SvcClientId: '1001' },
      '/menus/dishes': { SvcClientId: '1001', menuId: '101' },
    };
    const dtos: Record<string, DtoClass<object>> = { '/visits/standard': VisitsQueryDto, '/menus': MenusQueryDto, '/menus/dishes': DishesQueryDto };
    let checked = 0;
    for (const [path, dto] of Object.entries(dtos)) {
      expect(verdict(dto, valid[path])).toBeNull();
      for (const parameter of contract.paths[path].get.parameters!) {
        const { name, schema } = parameter;
        const at = (value: string): { at: string; refused: boolean } => ({
          at: `${path} ${name}=${value.slice(0, 40)}`,
          refused: verdict(dto, { ...valid[path], [name]: value }) !== null,
        });
        const yes = (value: string) => ({ at: at(value).at, refused: true });
        const no = (value: string) => ({ at: at(value).at, refused: false });
        if (schema!.type === 'integer') {
          const { minimum, maximum } = schema as { minimum: number; maximum: number };
          expect(at(String(minimum))).toEqual(no(String(minimum)));
          expect(at(String(minimum - 1))).toEqual(yes(String(minimum - 1)));
          expect(at(String(maximum))).toEqual(no(String(maximum)));
          expect(at(String(maximum + 1))).toEqual(yes(String(maximum + 1)));
          checked++;
        }
        if (typeof schema!.maxLength === 'number' && name === 'after') {
          // Past the length, a well-shaped token is refused by the rules before it is read.
          expect(at(`${'a'.repeat(schema!.maxLength)}.b`)).toEqual(yes(`${'a'.repeat(schema!.maxLength)}.b`));
          checked++;
        }
        if (name === 'VisitTypes') {
          expect(at('MV,OF')).toEqual(no('MV,OF'));
          expect(at('MVX')).toEqual(yes('MVX'));
          checked++;
        }
      }
    }
    expect(checked).toBe(10);
  });

  it("gives the upload an example dish that Swagger UI's Execute adds, not one that replaces a dish of the demo data", () => {
    const schemas = contract.components.schemas as Record<string, { properties: Record<string, { example?: unknown }> }>;
    const example = JSON.parse(schemas.DishUploadDto.properties.json.example as string) as { menuId: number; code: string };
    const demo = JSON.parse(readFileSync(new URL('../../src/demo/demo-menus.json', import.meta.url), 'utf8')) as { id: number; dishes: { code: string }[] }[];
    const menu = demo.find((m) => m.id === example.menuId);
    expect(menu?.dishes.length).toBeGreaterThan(0);
    expect(menu?.dishes.map((d) => d.code)).not.toContain(example.code);
    expect(schemas.DishInputDto.properties.code.example).toBe(example.code);
  });
});
