import { request as httpRequest, type IncomingMessage } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { isIP } from 'node:net';
import type { AppConfig } from '../config/app-config.js';
import { signatureHeader } from './webhook-signature.js';
import { addressRefusal, guardedLookup, hostOf, type AddressPolicy } from './webhook-url.js';

/** At most this much of a receiver's answer is read; the rest is never waited for. */
export const MAX_RESPONSE_BYTES = 64 * 1024;

export interface WebhookRequest {
  url: string;
  body: string;
  headers: Record<string, string>;
  policy: AddressPolicy;
  timeoutMs: number;
}

export interface WebhookResult {
  /** A 2xx within the timeout. */
  ok: boolean;
  /** The receiver's status, null when none came. */
  status: number | null;
  /** What went wrong, for the endpoint's last error and the log; null on success. */
  error: string | null;
}

/**
 * Text a receiver has a say in, on one line, for `webhooks list` and the logs. Control and
 * format characters become U+FFFD: a receiver's answer must not drive the operator's terminal
 * (escape sequences that rewrite lines or set the title).
 */
function oneLine(text: string): string {
  return text
    .replace(/\s+/g, ' ')
    .replace(/[\p{Cc}\p{Cf}]/gu, '\uFFFD')
    .trim();
}

/** The start of a refusal's body, on one line. */
function snippet(body: Buffer): string {
  const text = oneLine(body.toString('utf8', 0, Math.min(body.length, 200)));
  return text ? `: ${text}` : '';
}

/**
 * A connection's failure, on one line: such messages end in a line break (OpenSSL's) or quote
 * what the receiver sent (the names of its certificate), which the operator's terminal then shows.
 */
function failure(error: NodeJS.ErrnoException): string {
  return oneLine(error.code && !error.message.includes(error.code) ? `${error.code}: ${error.message}` : error.message);
}

function outcome(status: number, body: Buffer): WebhookResult {
  if (status >= 200 && status < 300) return { ok: true, status, error: null };
  // A redirection (RFC 9110 §15.4) names where to go, which is never followed; 304 and 305 name nothing to follow.
  const redirect = [300, 301, 302, 303, 307, 308].includes(status) ? ' (redirects are not followed)' : '';
  return { ok: false, status, error: `HTTP ${status}${redirect}${snippet(body)}` };
}

/**
 * Reads the receiver's answer. A 2xx is the receiver's acknowledgement: it is taken as the
 * status arrives, and the body is not waited for (a receiver that answers 200 and keeps the
 * body open has the event). Of a refusal, at most MAX_RESPONSE_BYTES are read for its error,
 * then the connection is let go: a receiver that streams without end holds neither memory nor
 * a delivery slot. Gives what was read so far, for a refusal whose body does not end in time.
 */
function readAnswer(res: IncomingMessage, finish: (result: WebhookResult) => void): () => WebhookResult {
  const status = res.statusCode ?? 0;
  const chunks: Buffer[] = [];
  let size = 0;
  const sofar = (): WebhookResult => outcome(status, Buffer.concat(chunks));
  if (status >= 200 && status < 300) {
    finish(sofar());
    res.destroy();
    return sofar;
  }
  const done = (): void => finish(sofar());
  res.on('data', (chunk: Buffer) => {
    if (size >= MAX_RESPONSE_BYTES) return;
    chunks.push(chunk.subarray(0, MAX_RESPONSE_BYTES - size));
    size += chunk.length;
    if (size >= MAX_RESPONSE_BYTES) {
      done();
      res.destroy();
    }
  });
  res.once('end', done);
  res.on('error', done);
  return sofar;
}

/**
 * One POST to a receiver, with node's http client: no redirect is followed, the address
 * connected to is checked against the endpoint's policy, and the whole exchange (connect,
 * answer, body) is bounded by the timeout. Never rejects: a failure is a result.
 */
export function postWebhook(req: WebhookRequest): Promise<WebhookResult> {
  const url = new URL(req.url);
  const host = hostOf(url);
  // A literal address is never looked up: it is checked here.
  const refusal = isIP(host) ? addressRefusal(host, url.protocol, req.policy) : null;
  if (refusal) return Promise.resolve({ ok: false, status: null, error: `refused: ${refusal}` });
  return new Promise((resolve) => {
    let settled = false;
    const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
    const client = send(url, {
      method: 'POST',
      headers: { ...req.headers, 'content-length': String(Buffer.byteLength(req.body)) },
      lookup: guardedLookup(url.protocol, req.policy, () => settled),
      agent: false,
    });
    const finish = (result: WebhookResult): void => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      client.destroy();
      resolve(result);
    };
    // The answer read so far, once its status has come.
    let answer: (() => WebhookResult) | null = null;
    const timer = setTimeout(() => finish(answer?.() ?? { ok: false, status: null, error: `no answer within ${req.timeoutMs} ms` }), req.timeoutMs);
    // Kept after the result too: destroying the request may still report an error.
    client.on('error', (error: NodeJS.ErrnoException) => {
      finish({ ok: false, status: null, error: failure(error) });
    });
    client.once('response', (res) => {
      answer = readAnswer(res, finish);
    });
    client.end(req.body);
  });
}

/** Where an event goes and what signs it. */
export interface EventTarget {
  url: string;
  allowPrivate: boolean;
  /** The secrets in clear, newest first. */
  secrets: readonly string[];
}

/** Sends one event as its receiver gets it: the JSON body, signed, with its id in svc-event-id. */
export function sendEvent(target: EventTarget, event: { id: string }, config: Pick<AppConfig, 'WEBHOOKS_TIMEOUT_MS' | 'WEBHOOKS_ALLOW_HTTP_LOOPBACK'>): Promise<WebhookResult> {
  const body = JSON.stringify(event);
  return postWebhook({
    url: target.url,
    body,
    headers: {
      'content-type': 'application/json',
      'user-agent': 'results-service-webhooks/1.0',
      'svc-event-id': event.id,
      'svc-signature': signatureHeader(body, target.secrets, new Date()),
    },
    policy: { allowPrivate: target.allowPrivate, allowHttpLoopback: config.WEBHOOKS_ALLOW_HTTP_LOOPBACK },
    timeoutMs: config.WEBHOOKS_TIMEOUT_MS,
  });
}
