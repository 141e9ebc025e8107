import { getSchemaPath, type ParameterObject, type PathItemObject, type WebhooksObject } from '@nestjs/swagger';
import { PING, PingEventDto, VISITS_CHANGED, VisitsChangedEventDto } from './dto/webhook-event.dto.js';

/** The event schemas, added to the contract's components (no route uses them). */
export const WEBHOOK_EVENT_MODELS = [VisitsChangedEventDto, PingEventDto];

const HEADERS: ParameterObject[] = [
  {
    name: 'svc-signature',
    in: 'header',
    required: true,
    description:
      '`t=<unix seconds>,v1=<hex HMAC-SHA-256 of "<t>.<raw body>">`, keyed by the endpoint\'s signing secret exactly as shown ' +
      '(`whsec_…`). For 24 hours after `webhooks rotate-secret` there are two `v1` values, one per secret: accept the request ' +
      'when one matches. Reject a `t` more than 5 minutes from now (a replay).',
    schema: { type: 'string', pattern: '^t=\\d+(,v1=[0-9a-f]{64})+$', example: 't=1795341605,v1=9f2d6c0b8e4a71f3c5d9e0a2b4c6d8e0f1a3b5c7d9e1f3a5b7c9d1e3f5a7b9c1' },
  },
  {
    name: 'svc-event-id',
    in: 'header',
    required: true,
    description: 'The event id (`id` of the body), the same on every retry: ignore an id already processed.',
    schema: { type: 'string', example: 'evt_0f8c3a9b5d2e4f6a8b1c3d5e7f9a0b2c' },
  },
];

const RESPONSES = {
  '2XX': { description: 'Taken. Any 2xx within 10 s; the body is not read beyond 64 KB.' },
  default: {
    description:
      'Anything else (a timeout, a connection error, a redirect, any other status) is retried with exponential backoff and ' +
      'jitter for up to 24 hours (WEBHOOKS_RETRY_HOURS); then the event is dropped and the endpoint is marked failing.',
  },
};

function webhook(name: string, summary: string, description: string, model: Function): PathItemObject {
  return {
    post: {
      operationId: `webhook_${name.replace(/\.(\w)/g, (_m: string, c: string) => c.toUpperCase())}`,
      tags: ['webhooks'],
      summary,
      description,
      parameters: HEADERS,
      requestBody: { required: true, content: { 'application/json': { schema: { $ref: getSchemaPath(model) } } } },
      responses: RESPONSES,
      security: [],
    },
  };
}

/**
 * The events the service POSTs to a partner's endpoint (OpenAPI 3.1 `webhooks`): registered
 * by the operator with `webhooks add`, signed, delivered at least once.
 */
export const WEBHOOKS_OPENAPI: WebhooksObject = {
  [VISITS_CHANGED]: webhook(
    VISITS_CHANGED,
    'Visits of a client changed.',
    'Sent when an import inserted or changed visits of a client the credential may read (its brands and visit types only). ' +
      'Thin: it carries no visit data; read the change feed (`GET /visits/standard/changes` or `/visits/plus/changes`) from ' +
      'your stored `after` token. Changes of one client within a few seconds are one event. Delivery is at least once and ' +
      'events may arrive out of order.',
    VisitsChangedEventDto,
  ),
  [PING]: webhook(PING, 'A test event.', 'Sent by the operator command `webhooks test`.', PingEventDto),
};
