import { readFileSync } from 'node:fs';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import type { NextFunction, Request, Response } from 'express';
import { Ajv, type ValidateFunction } from 'ajv';
import formats from 'ajv-formats';

// ajv-formats is CommonJS: its default export is the plugin function.
const addFormats = formats as unknown as (ajv: Ajv) => Ajv;

type Schema = Record<string, unknown>;
interface MediaType {
  schema?: Schema;
}
interface ResponseSpec {
  content?: Record<string, MediaType>;
  headers?: Record<string, unknown>;
}
interface Operation {
  responses: Record<string, ResponseSpec>;
}

interface WebhookOperation {
  parameters: { name: string; in: string; required?: boolean }[];
  requestBody: { content: Record<string, MediaType> };
}

const contract = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8')) as {
  paths: Record<string, Record<string, Operation>>;
  webhooks: Record<string, { post: WebhookOperation }>;
  components: { schemas: Record<string, Schema>; headers?: Record<string, { required?: boolean }> };
};

/** A response header's description, through its `$ref` to the contract's headers. */
function headerSpec(header: unknown): { required?: boolean } {
  const { $ref } = header as { $ref?: string };
  return $ref ? (contract.components.headers?.[$ref.replace('#/components/headers/', '')] ?? {}) : (header as { required?: boolean });
}

/** OpenAPI 3.0 schemas as JSON Schema: `nullable` becomes a null alternative. */
function toJsonSchema(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(toJsonSchema);
  if (node === null || typeof node !== 'object') return node;
  const { nullable, example: _example, ...rest } = node as Schema;
  const out = Object.fromEntries(Object.entries(rest).map(([k, v]) => [k, k === 'properties' ? mapValues(v, toJsonSchema) : toJsonSchema(v)]));
  if (typeof out.$ref === 'string') out.$ref = `contract${out.$ref}`;
  if (nullable !== true) return out;
  // `nullable` next to a composition (how @nestjs/swagger writes a nullable object): the value or null.
  if (out.allOf || out.oneOf || out.anyOf || out.$ref) {
    const { type: _type, ...composed } = out;
    return { anyOf: [composed, { type: 'null' }] };
  }
  if (typeof out.type === 'string') return { ...out, type: [out.type, 'null'], ...(out.enum ? { enum: [...(out.enum as unknown[]), null] } : {}) };
  return { anyOf: [out, { type: 'null' }] };
}

function mapValues(value: unknown, fn: (v: unknown) => unknown): unknown {
  return Object.fromEntries(Object.entries(value as Schema).map(([k, v]) => [k, fn(v)]));
}

const ajv = new Ajv({ strict: false, allErrors: true });
addFormats(ajv);
for (const format of ['int64', 'int32', 'double', 'float', 'binary', 'password']) ajv.addFormat(format, true);
ajv.addSchema({ $id: 'contract', components: { schemas: mapValues(contract.components.schemas, toJsonSchema) } });

const routes = Object.entries(contract.paths).map(([template, operations]) => ({
  template,
  // As Express routes a path: whatever its case, with or without a trailing slash.
  pattern: new RegExp(`^${template.replace(/\{[^}]+\}/g, '[^/]+')}/?$`, 'i'),
  operations,
}));
const validators = new Map<Schema, ValidateFunction>();

function validatorFor(schema: Schema): ValidateFunction {
  let validate = validators.get(schema);
  if (!validate) {
    validate = ajv.compile(toJsonSchema(schema) as Schema);
    validators.set(schema, validate);
  }
  return validate;
}

/** Checks one response against the contract; returns what does not match. */
export function contractViolations(method: string, path: string, status: number, headers: Record<string, unknown>, body: Buffer): string[] {
  const route = routes.find((r) => r.pattern.test(path));
  const where = `${method} ${path} -> ${status}`;
  if (!route) return status === 404 ? [] : [`${where}: the path is not in the contract`];
  // A HEAD is its GET without the body (RFC 9110 §9.3.2): its headers are checked as the GET's.
  const head = method === 'HEAD';
  const operation = route.operations[head ? 'get' : method.toLowerCase()];
  if (!operation) return status === 404 || status === 405 ? [] : [`${where}: the method is not in the contract`];
  const spec = operation.responses[String(status)];
  if (!spec) return [`${where}: status ${status} is not documented`];
  const problems: string[] = [];
  for (const [name, header] of Object.entries(spec.headers ?? {})) {
    // A header documented as optional (`required: false`) may be absent; every other must be sent.
    if (headerSpec(header).required === false) continue;
    if (headers[name.toLowerCase()] === undefined) problems.push(`${where}: documented header ${name} is missing`);
  }
  if (status === 304 || head || !spec.content) return problems;
  const contentType = headers['content-type'];
  const type = (typeof contentType === 'string' ? contentType : '').split(';')[0]?.trim() ?? '';
  const media = spec.content[type];
  if (!media) return [...problems, `${where}: content type '${type}' is not documented (${Object.keys(spec.content).join(', ')})`];
  if (!media.schema || !type.includes('json')) return problems;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body.toString('utf8'));
  } catch {
    return [...problems, `${where}: body is not JSON`];
  }
  const validate = validatorFor(media.schema);
  if (!validate(parsed)) problems.push(`${where}: body does not match the schema: ${ajv.errorsText(validate.errors)}`);
  return problems;
}

/**
 * Checks a request the service sent to a webhook receiver against the contract's `webhooks`
 * entry of its event type: the required headers, the content type and the body's schema.
 */
export function webhookViolations(headers: Record<string, unknown>, rawBody: string): string[] {
  let body: { type?: unknown };
  try {
    body = JSON.parse(rawBody) as { type?: unknown };
  } catch {
    return ['the webhook body is not JSON'];
  }
  const operation = contract.webhooks[String(body.type)]?.post;
  if (!operation) return [`the event type ${String(body.type)} is not in the contract's webhooks`];
  const where = `webhook ${String(body.type)}`;
  const problems = operation.parameters
    .filter((p) => p.in === 'header' && p.required && headers[p.name.toLowerCase()] === undefined)
    .map((p) => `${where}: documented header ${p.name} is missing`);
  const contentType = headers['content-type'];
  const type = (typeof contentType === 'string' ? contentType : '').split(';')[0]?.trim() ?? '';
  const schema = operation.requestBody.content[type]?.schema;
  if (!schema) return [...problems, `${where}: content type '${type}' is not documented`];
  const validate = validatorFor(schema);
  if (!validate(body)) problems.push(`${where}: body does not match the schema: ${ajv.errorsText(validate.errors)}`);
  return problems;
}

/** The body as the handler wrote it: compressed responses are checked as their client reads them. */
function decoded(body: Buffer, encoding: unknown): Buffer {
  // A HEAD's answer names its GET's coding and has no body.
  if (body.length === 0) return body;
  if (encoding === 'br') return brotliDecompressSync(body);
  return encoding === 'gzip' ? gunzipSync(body) : body;
}

/**
 * Express middleware for the HTTP tests: every response the app sends is checked against
 * the committed contract; what does not match is collected in `violations`.
 */
export function contractRecorder(violations: string[]) {
  return (req: Request, res: Response, next: NextFunction): void => {
    // Swagger UI's files and CORS preflights are not operations of the contract.
    if (req.path.startsWith('/docs') || req.method === 'OPTIONS') return next();
    const chunks: Buffer[] = [];
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    const keep = (chunk: unknown): void => {
      if (chunk !== undefined && chunk !== null && typeof chunk !== 'function') chunks.push(Buffer.from(chunk as string));
    };
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk);
      return write(chunk, ...rest);
    }) as Response['write'];
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk);
      const body = decoded(Buffer.concat(chunks), res.getHeader('Content-Encoding'));
      violations.push(...contractViolations(req.method, req.path, res.statusCode, res.getHeaders(), body));
      return end(chunk, ...rest);
    }) as Response['end'];
    next();
  };
}
