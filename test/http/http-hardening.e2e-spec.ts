import { readFileSync } from 'node:fs';
import { METHODS } from 'node:http';
import { connect } from 'node:net';
import type { AddressInfo } from 'node:net';
import request from 'supertest';
import { jest } from '@jest/globals';
import { AppLogger } from '../../src/logging/app-logger.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { eventually } from '../helpers/eventually.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const ORDER = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE'];

/** The value of the sample of metric `name` whose labels match `labels` (a pattern) in a Prometheus exposition; 0 when there is none. */
const sampleOf = (exposition: string, name: string, labels: string): number =>
  Number(new RegExp(`^${name}\\{${labels}\\} (\\d+)$`, 'm').exec(exposition)?.[1] ?? 0);
const TITLES: Record<number, string> = { 400: 'Bad Request', 414: 'URI Too Long', 431: 'Request Header Fields Too Large', 501: 'Not Implemented' };

describe(`HTTP hardening (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ TRUST_PROXY: '1', RATE_LIMIT_PER_MINUTE: '2' });
  });
  afterAll(async () => {
    await t.close();
  });

  /** Writes `raw` on a new connection and gives all the server sent until it closed. */
  async function rawExchange(raw: string): Promise<string> {
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    return new Promise((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(raw));
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
  }

  it.each([
    ['headers over 16 KiB', `GET /branches HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${'a'.repeat(20_000)}\r\n\r\n`, 431, 'The request line and headers are larger than the service accepts (16 KiB).'],
    // The parser stops inside the request target: the target is what is too long (RFC 9112 §3).
    ['a URL over 16 KiB', `GET /branches?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414, 'The request target is longer than the service accepts (16 KiB with the headers).'],
    ['a URL over 16 KiB after a pipelined request', `GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /branches?q=${'a'.repeat(20_000)} HTTP/1.1\r\nHost: x\r\n\r\n`, 414, 'The request target is longer than the service accepts (16 KiB with the headers).'],
    ['a header over 16 KiB whose value looks like a request line', `GET /branches HTTP/1.1\r\nHost: x\r\nX-Note: GET /${'a'.repeat(20_000)}\r\n\r\n`, 431, 'The request line and headers are larger than the service accepts (16 KiB).'],
    // A method the service does not know, in a request line otherwise well-formed (RFC 9110 §9.1); methods are case-sensitive.
    ['an unknown method', 'BREW /branches HTTP/1.1\r\nHost: x\r\n\r\n', 501, "The method 'BREW' is not one the service implements."],
    ['a method in lower case', 'get /health/live HTTP/1.1\r\nHost: x\r\n\r\n', 501, "The method 'get' is not one the service implements."],
    // Quoted as any answer quotes what a request sent: a credential by its form (a client secret pasted as the method) as [redacted], in the log too.
    ['an unknown method that is a client secret', 'svcs_k3Y-secret /branches HTTP/1.1\r\nHost: x\r\n\r\n', 501, "The method '[redacted]' is not one the service implements."],
    ['an unknown method after a pipelined request', 'GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nPROPFINDX /branches HTTP/1.1\r\nHost: x\r\n\r\n', 501, "The method 'PROPFINDX' is not one the service implements."],
    // Bytes that are no request line at all: a TLS handshake sent to the plain port.
    ['a TLS handshake', '\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03', 400, 'The request is not well-formed HTTP/1.1.'],
    // HTTP/1.0 has no Transfer-Encoding: faulty framing, and the connection closes although it asked to stay open (RFC 9112 §6.1).
    ['an HTTP/1.0 request with Transfer-Encoding', 'POST /menus/dishes HTTP/1.0\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\nContent-Type: multipart/form-data; boundary=a\r\n\r\n0\r\n\r\nGET /health/live HTTP/1.0\r\n\r\n', 400, 'An HTTP/1.0 request cannot carry Transfer-Encoding: send its body with Content-Length.'],
    ['a header line without a colon', 'GET /branches HTTP/1.1\r\nHost: x\r\nno colon here\r\n\r\n', 400, 'The request is not well-formed HTTP/1.1.'],
    ['Content-Length beside Transfer-Encoding', 'POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n', 400, 'The request is not well-formed HTTP/1.1.'],
    ['two Content-Length headers', 'POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab', 400, 'The request is not well-formed HTTP/1.1.'],
    ['an HTTP/1.1 request without Host', 'GET /health/live HTTP/1.1\r\n\r\n', 400, 'The request is not well-formed HTTP/1.1.'],
    ['two Host headers', 'GET /health/live HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n', 400, 'The request has more than one Host header; it must have one.'],
    ['a Transfer-Encoding that does not end in chunked', 'GET /branches HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip\r\n\r\n', 400, 'The request is not well-formed HTTP/1.1.'],
    ['Transfer-Encoding: identity on an upload', 'POST /menus/dishes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Type: multipart/form-data; boundary=a\r\n\r\n--a--', 400, 'The request is not well-formed HTTP/1.1.'],
    ['a Host with a space', 'GET /health/live HTTP/1.1\r\nHost: a b\r\n\r\n', 400, "The request's Host header is not a host name or address with an optional port."],
    ['a Host with a path', 'GET /health/live HTTP/1.1\r\nHost: a/b?c\r\n\r\n', 400, "The request's Host header is not a host name or address with an optional port."],
    ['a Host with userinfo', 'GET /health/live HTTP/1.1\r\nHost: user@a\r\n\r\n', 400, "The request's Host header is not a host name or address with an optional port."],
    ['a Host with a port that is no number', 'GET /health/live HTTP/1.1\r\nHost: a:80x\r\n\r\n', 400, "The request's Host header is not a host name or address with an optional port."],
    // A URL as the target (absolute form, as sent to a proxy) names this service's resource only as http(s), without userinfo.
    ['a URL of another scheme as the target', 'GET ftp://x/health/live HTTP/1.1\r\nHost: x\r\n\r\n', 400, "The request target is a URL of the scheme 'ftp': send a path, or an http or https URL."],
    ['a URL with a user name and password as the target', 'GET http://u:p@x/health/live HTTP/1.1\r\nHost: x\r\n\r\n', 400, 'The request target holds a user name or password before its host, which a request does not carry: leave them out.'],
    ['a fragment in the target', 'GET /branches#x?SvcClientId=1001 HTTP/1.1\r\nHost: x\r\n\r\n', 400, "The request target holds '#', which a request does not carry: leave the fragment out, and send '#' in a value as %23."],
    ["a '#' in a query value", 'GET /visits/standard?Take=1#frag HTTP/1.1\r\nHost: x\r\n\r\n', 400, "The request target holds '#', which a request does not carry: leave the fragment out, and send '#' in a value as %23."],
    // Node keeps the first Content-Type and joins Content-Encodings: a proxy may read the body by another.
    ['two Content-Type headers', 'PUT /branches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n', 400, 'The request has more than one Content-Type header; it may have one.'],
    ['two multipart Content-Type headers on an upload', 'POST /menus/dishes HTTP/1.1\r\nHost: x\r\ncontent-type: multipart/form-data; boundary=a\r\nCONTENT-TYPE: multipart/form-data; boundary=b\r\nContent-Length: 0\r\n\r\n', 400, 'The request has more than one Content-Type header; it may have one.'],
    ['two Content-Encoding headers', 'POST /menus/dishes HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=a\r\nContent-Encoding: gzip\r\nContent-Encoding: identity\r\nContent-Length: 0\r\n\r\n', 400, 'The request has more than one Content-Encoding header; it may have one.'],
    ['a Content-Type naming a parameter twice', 'POST /menus/dishes HTTP/1.1\r\nHost: x\r\nContent-Type: multipart/form-data; boundary=a; Boundary="b"\r\nContent-Length: 0\r\n\r\n', 400, "The request's Content-Type names its Content-Type parameter 'boundary' more than once: send each once."],
    ['a second Host after 2000 other headers', `GET /health/live HTTP/1.1\r\nHost: a\r\n${'a: 1\r\n'.repeat(2000)}Host: b\r\n\r\n`, 400, 'The request has more than one Host header; it must have one.'],
  ])('answers what the HTTP parser refuses (%s) with a problem document, and closes', async (_what, raw, status, detail) => {
    const logged = jest.spyOn(t.app.get(AppLogger), 'infoFields');
    const answer = await rawExchange(raw);
    // Nothing pipelined after the refused request is answered; a request before it is, and
    // first: a client matches answers to its requests by their order (RFC 9112 §9.3.2).
    const earlier = raw.startsWith('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\n') ? ['HTTP/1.1 200 '] : [];
    expect(answer.match(/HTTP\/1\.1 \d{3} /g)).toEqual([...earlier, `HTTP/1.1 ${status} `]);
    const [head, body] = answer.slice(answer.lastIndexOf(`HTTP/1.1 ${status} `)).split('\r\n\r\n');
    const lines = head.split('\r\n');
    expect(lines[0]).toBe(`HTTP/1.1 ${status} ${TITLES[status]}`);
    // Logged with the ids a partner would quote: the request id and the problem instance.
    const requestId = lines.find((l) => l.startsWith('X-Request-Id: '))?.slice('X-Request-Id: '.length);
    expect(logged.mock.calls).toEqual([
      [
        expect.objectContaining({ problemInstance: JSON.parse(body).instance, req: expect.objectContaining({ id: requestId }), res: { statusCode: status }, detail }),
        'request refused before the application',
      ],
    ]);
    logged.mockRestore();
    expect(lines).toEqual(
      expect.arrayContaining(['Content-Type: application/problem+json; charset=utf-8', 'Connection: close', 'Cache-Control: no-store', `Content-Length: ${Buffer.byteLength(body)}`]),
    );
    expect(lines.some((l) => /^X-Request-Id: [0-9a-f-]{36}$/.test(l))).toBe(true);
    // Dated as every answer is (RFC 9110 §6.6.1), those written straight to the connection too.
    expect(lines.filter((l) => l.startsWith('Date: ')).map((l) => Date.parse(l.slice(6)) > Date.now() - 60_000)).toEqual([true]);
    expect(JSON.parse(body)).toEqual({
      title: TITLES[status],
      status,
      detail,
      instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
      // Every 400 lists what the request broke.
      ...(status === 400 ? { errors: [detail] } : {}),
    });
  });

  it.each([
    ['an HTTP/1.0 request with Transfer-Encoding', 'POST /connect/token HTTP/1.0\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n0\r\n\r\n', 400, 'An HTTP/1.0 request cannot carry Transfer-Encoding: send its body with Content-Length.'],
    ['Transfer-Encoding: identity', 'POST /connect/token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: identity\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\ngrant_type=client_credentials', 400, 'The request is not well-formed HTTP/1.1.'],
    ['a transfer coding before chunked', 'POST /connect/token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\n0\r\n\r\n', 501, 'The request has a transfer coding the service does not apply: send its body with Transfer-Encoding: chunked alone, or with Content-Length.'],
    ['no Host', 'POST /connect/token HTTP/1.1\r\nContent-Length: 0\r\n\r\n', 400, 'The request is not well-formed HTTP/1.1.'],
    ['a Host that is no host', 'POST /Connect/Token/ HTTP/1.1\r\nHost: a b\r\nContent-Length: 0\r\n\r\n', 400, "The request's Host header is not a host name or address with an optional port."],
    ['two Content-Type headers', 'POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Type: text/plain\r\nContent-Length: 0\r\n\r\n', 400, 'The request has more than one Content-Type header; it may have one.'],
    ['two Content-Encoding headers', 'POST http://x/connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Encoding: gzip\r\nContent-Encoding: identity\r\nContent-Length: 0\r\n\r\n', 400, 'The request has more than one Content-Encoding header; it may have one.'],
    ['a Content-Type naming a parameter twice', 'POST /connect/%74oken HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded; charset=utf-8; Charset="utf-16"\r\nContent-Length: 0\r\n\r\n', 400, "The request's Content-Type names its Content-Type parameter 'charset' more than once: send each once."],
    ['a fragment in the target', 'POST /connect/token#x HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n', 400, "The request target holds '#', which a request does not carry: leave the fragment out, and send '#' in a value as %23."],
    ['a request line of HTTP/2.0', 'POST /connect/token HTTP/2.0\r\nHost: x\r\nContent-Length: 0\r\n\r\n', 505, 'The HTTP version of the request is not supported: send HTTP/1.1.'],
  ])("answers a token request whose head it refuses (%s) in OAuth's form, as every error of that endpoint, and closes", async (_what, raw, status, detail) => {
    const logged = jest.spyOn(t.app.get(AppLogger), 'infoFields');
    const answer = await rawExchange(raw);
    expect(answer.match(/HTTP\/1\.1 \d{3} /g)).toEqual([`HTTP/1.1 ${status} `]);
    const [head, body] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    expect(lines).toEqual(
      expect.arrayContaining(['Content-Type: application/json; charset=utf-8', 'Cache-Control: no-store', 'Pragma: no-cache', 'Connection: close', `Content-Length: ${Buffer.byteLength(body)}`]),
    );
    expect(JSON.parse(body)).toEqual({ error: 'invalid_request', error_description: detail });
    const requestId = lines.find((l) => l.startsWith('X-Request-Id: '))?.slice('X-Request-Id: '.length);
    expect(requestId).toMatch(/^[0-9a-f-]{36}$/);
    expect(logged.mock.calls).toEqual([[expect.objectContaining({ req: expect.objectContaining({ id: requestId }), res: { statusCode: status }, detail }), 'request refused before the application']]);
    logged.mockRestore();
  });

  it("reads a Content-Type whose parameter names appear again only inside a quoted value", async () => {
    const answer = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nContent-Type: text/plain; a="x; a=y"; b=1\r\nConnection: close\r\n\r\n');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });

  it('answers a malformed chunk of a request pipelined behind another at once, and closes', async () => {
    // The refused request is the application's already (its body was being read): not held
    // back behind the earlier answer, where it would wait for a body that never comes.
    const answer = await rawExchange(
      'GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nPOST /connect/token HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nZZ\r\n',
    );
    expect(answer.match(/HTTP\/1\.1 \d{3} /g)?.at(-1)).toBe('HTTP/1.1 400 ');
    // The token endpoint's, in OAuth's form: the request's head was read, so its endpoint is known.
    expect(JSON.parse(answer.slice(answer.lastIndexOf('\r\n\r\n') + 4))).toEqual({ error: 'invalid_request', error_description: 'The request is not well-formed HTTP/1.1.' });
    const upload = await rawExchange(
      'GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nPOST /menus/dishes HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.31\r\nTransfer-Encoding: chunked\r\nContent-Type: multipart/form-data; boundary=a\r\n\r\nZZ\r\n',
    );
    expect(upload.match(/HTTP\/1\.1 \d{3} /g)?.at(-1)).toBe('HTTP/1.1 400 ');
    expect(JSON.parse(upload.slice(upload.lastIndexOf('\r\n\r\n') + 4))).toMatchObject({ status: 400, detail: 'The request is not well-formed HTTP/1.1.' });
  });

  it('closes without a second answer when a malformed chunk comes after its request was answered', async () => {
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write('GET /health/live HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n'));
      let received = '';
      socket.on('data', (chunk: Buffer) => {
        received += chunk.toString('utf8');
        // The body's first chunk, malformed, once the whole answer is in.
        if (received.endsWith('{"status":"ok"}')) setTimeout(() => socket.write('zz\r\n'), 100);
      });
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
    // A client would pair a second answer with the next request it sends on the connection.
    expect(answer.match(/HTTP\/1\.1 \d{3} /g)).toEqual(['HTTP/1.1 200 ']);
    expect(answer.endsWith('\r\n\r\n{"status":"ok"}')).toBe(true);
  });

  it('answers a header over 16 KiB that arrives in two reads, the second starting like a request line, with a 431', async () => {
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const answer = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => {
        socket.write('GET /branches HTTP/1.1\r\nHost: x\r\nX-Note: ');
        // The value's rest in a read of its own: `foo bbb…` looks like a method and a target.
        setTimeout(() => socket.write(`foo ${'b'.repeat(20_000)}\r\n\r\n`), 100);
      });
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
  });

  it('answers CONNECT, which asks for a tunnel, with a 501 problem instead of a closed connection', async () => {
    for (const target of ['example.com:443', '/branches']) {
      const answer = await rawExchange(`CONNECT ${target} HTTP/1.1\r\nHost: example.com\r\n\r\n`);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head.split('\r\n')[0]).toBe('HTTP/1.1 501 Not Implemented');
      expect(head).toMatch(/\r\nDate: [A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT\r\n/);
      expect(head).toContain('Content-Type: application/problem+json; charset=utf-8');
      expect(JSON.parse(body)).toEqual({
        title: 'Not Implemented',
        status: 501,
        detail: 'CONNECT is not supported: the service is no proxy.',
        instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
      });
    }
  });

  it('answers a request that says Connection: close, and reads nothing sent after it on the connection (RFC 9112 §9.6)', async () => {
    const answer = await rawExchange(
      'GET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\nGET /health/live HTTP/1.1\r\nHost: x\r\n\r\n',
    );
    const [head, body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(head).toMatch(/\r\nConnection: close($|\r\n)/i);
    expect(JSON.parse(body)).toEqual({ status: 'ok' });
    // One answer only: the second request is not answered, nor refused.
    expect(answer.match(/HTTP\/1\.1 /g)).toHaveLength(1);
  });

  it('sends security headers, a CSP that allows only its own scripts, and no X-Powered-By', async () => {
    const res = await request(t.http).get('/health/live');
    expect(res.headers['x-powered-by']).toBeUndefined();
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(res.headers['x-frame-options']).toBe('SAMEORIGIN');
    const csp = res.headers['content-security-policy'];
    expect(csp).toContain("default-src 'self'");
    expect(csp).toContain("script-src 'self'");
    expect(csp).toContain("frame-ancestors 'none'");
    expect(csp).not.toContain("script-src 'self' 'unsafe-inline'");
  });

  it('sends neither HSTS nor upgrade-insecure-requests over plain http (Swagger UI loads at any http address)', async () => {
    for (const path of ['/health/live', '/docs', '/docs/swagger-ui-init.js']) {
      const res = await request(t.http).get(path);
      expect(res.status).toBe(200);
      expect(res.headers['strict-transport-security']).toBeUndefined();
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
    }
    const forwardedHttp = await request(t.http).get('/docs').set('X-Forwarded-Proto', 'http');
    expect(forwardedHttp.headers['strict-transport-security']).toBeUndefined();
    expect(forwardedHttp.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
  });

  it('sends HSTS and upgrade-insecure-requests when the trusted proxy says the request came over https', async () => {
    for (const path of ['/health/live', '/docs']) {
      const res = await request(t.http).get(path).set('X-Forwarded-Proto', 'https');
      expect(res.status).toBe(200);
      expect(res.headers['strict-transport-security']).toMatch(/^max-age=\d+; includeSubDomains$/);
      expect(res.headers['content-security-policy']).toContain("script-src 'self'");
      expect(res.headers['content-security-policy']).toMatch(/(^|;)upgrade-insecure-requests(;|$)/);
    }
  });

  it('answers no CORS preflight unless origins are configured', async () => {
    const res = await request(t.http)
      .options('/branches')
      .set('Origin', 'https://bi.example.com')
      .set('Access-Control-Request-Method', 'GET');
    expect(res.headers['access-control-allow-origin']).toBeUndefined();
  });

  it("refuses a token form larger than 16 KiB with a 413 in the token endpoint's OAuth JSON", async () => {
    const res = await request(t.http)
      .post('/connect/token')
      .type('form')
      .send(`grant_type=client_credentials&scope=${'x'.repeat(20 * 1024)}`);
    expect(res.status).toBe(413);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(JSON.parse(res.text)).toEqual({ error: 'invalid_request', error_description: 'The form is larger than the service accepts (16 KiB).' });
    // Refused after the rate limit, like any request: counted, with the limit's headers.
    expect(res.headers['ratelimit-policy']).toMatch(/"default";q=\d+;w=60/);
    expect(res.headers['x-rate-limit-remaining']).toMatch(/^\d+$/);
  });

  it('refuses a token form declared larger than 16 KiB without asking for it or reading it, and closes', async () => {
    // The client waits for a 100 Continue that never comes: the 413 comes instead.
    const head = 'POST /connect/token HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.21\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 400000000\r\nExpect: 100-continue\r\n\r\n';
    const answer = await rawExchange(head);
    const lines = answer.split('\r\n\r\n')[0].split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 413 Payload Too Large');
    expect(answer).not.toContain('100 Continue');
    expect(lines).toContain('Connection: close');
    expect(JSON.parse(answer.split('\r\n\r\n')[1])).toEqual({ error: 'invalid_request', error_description: 'The form is larger than the service accepts (16 KiB).' });
  });

  it('refuses a streamed body once it is past twice the limit, before it ends, and closes', async () => {
    // 40 KiB of a chunked form whose end never comes: the answer does not wait for it.
    const chunk = `a=${'x'.repeat(40 * 1024 - 2)}`;
    const raw = `POST /connect/token HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 203.0.113.22\r\nContent-Type: application/x-www-form-urlencoded\r\nTransfer-Encoding: chunked\r\n\r\n${chunk.length.toString(16)}\r\n${chunk}\r\n`;
    const answer = await rawExchange(raw);
    const lines = answer.split('\r\n\r\n')[0].split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 413 Payload Too Large');
    expect(lines).toContain('Connection: close');
    expect(JSON.parse(answer.split('\r\n\r\n')[1])).toEqual({ error: 'invalid_request', error_description: 'The form is larger than the service accepts (16 KiB).' });
  });

  it("ignores a body sent with a GET or another method no route reads it for: a GET's answer is the same, an unknown method's a 405", async () => {
    const get = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nConnection: close\r\n\r\n{bad');
    expect(get.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    const encoded = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Encoding: compress\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}');
    expect(encoded.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    const put = await rawExchange('PUT /branches HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\nConnection: close\r\n\r\n{bad');
    expect(put.split('\r\n')[0]).toBe('HTTP/1.1 405 Method Not Allowed');
    // The connection goes on after a GET whose body was not read: the body is not taken for the next request.
    const both = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 4\r\n\r\n{badGET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(both.match(/HTTP\/1\.1 \d{3} /g)).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 200 ']);
  });

  it('takes the client address from the ingress (TRUST_PROXY=1) for requests without a key', async () => {
    const from = (ip: string) => request(t.http).get('/branches?SvcClientId=1001').set('X-Forwarded-For', ip);
    expect((await from('203.0.113.7')).headers.ratelimit).toMatch(/^"default";r=1;/);
    expect((await from('203.0.113.7')).headers.ratelimit).toMatch(/^"default";r=0;/);
    expect((await from('203.0.113.7')).status).toBe(429);
    const other = await from('198.51.100.9');
    expect(other.status).toBe(401);
    expect(other.headers.ratelimit).toMatch(/^"default";r=1;/);
  });

  it('counts a 405 in the metrics under the route whose path it named, and a 404 as unmatched', async () => {
    const before = await t.app.get(MetricsService).registry.metrics();
    const count = (text: string, labels: string): number => sampleOf(text, 'results_http_requests_total', labels);
    const wrongMethod = '(?=.*method="POST")(?=.*route="/health/live")(?=.*status="405")[^}]*';
    const nowhere = '(?=.*method="GET")(?=.*route="unmatched")(?=.*status="404")[^}]*';
    expect((await request(t.http).post('/health/live')).status).toBe(405);
    expect((await request(t.http).get('/no/such/path')).status).toBe(404);
    const after = await t.app.get(MetricsService).registry.metrics();
    expect([count(after, wrongMethod) - count(before, wrongMethod), count(after, nowhere) - count(before, nowhere)]).toEqual([1, 1]);
    expect(after).not.toContain('{/*splat}');
  });

  it('counts a request whose client left while its body came as aborted, under its route', async () => {
    const text = (): Promise<string> => t.app.get(MetricsService).registry.metrics();
    const abortedToken = '(?=[^}]*method="POST")(?=[^}]*route="/connect/token")[^}]*';
    const before = await text();
    // The client goes away after part of its form (the 100 Continue says the service was reading it).
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    const continued = new Promise<void>((resolve) => socket.once('data', () => resolve()));
    // From addresses of their own: this file's rate limit is 2 a minute.
    socket.write('POST /connect/token HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.77\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n');
    await continued;
    socket.write('grant_type=client');
    // Gone: a reset.
    socket.resetAndDestroy();
    const aborted = async (): Promise<number> => sampleOf(await text(), 'results_http_requests_aborted_total', abortedToken) - sampleOf(before, 'results_http_requests_aborted_total', abortedToken);
    expect(await eventually(aborted, (n) => n === 1)).toBe(1);
    const unmatched = '(?=[^}]*route="unmatched")[^}]*';
    expect(sampleOf(await text(), 'results_http_requests_aborted_total', unmatched)).toBe(sampleOf(before, 'results_http_requests_aborted_total', unmatched));
  });

  it('counts a request whose body the parser refused as answered with that status, not as aborted', async () => {
    const text = (): Promise<string> => t.app.get(MetricsService).registry.metrics();
    const token = '(?=[^}]*method="POST")(?=[^}]*route="/connect/token")';
    const refused = `${token}(?=[^}]*status="400")[^}]*`;
    const before = await text();
    // A chunk that is no chunk, in the body of a token request the application was reading.
    const answer = await rawExchange('POST /connect/token HTTP/1.1\r\nHost: x\r\nX-Forwarded-For: 198.51.100.78\r\nTransfer-Encoding: chunked\r\nContent-Type: application/x-www-form-urlencoded\r\n\r\nZZ\r\n');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    const counted = async (): Promise<number> => sampleOf(await text(), 'results_http_requests_total', refused) - sampleOf(before, 'results_http_requests_total', refused);
    expect(await eventually(counted, (n) => n === 1)).toBe(1);
    expect(sampleOf(await text(), 'results_http_requests_aborted_total', `${token}[^}]*`)).toBe(sampleOf(before, 'results_http_requests_aborted_total', `${token}[^}]*`));
  });

  it("counts the methods no route answers as one method, other, whatever a client sends: a scan of Node's 34 methods adds no series per method", async () => {
    const scanned = METHODS.filter((m) => m !== 'CONNECT');
    for (const method of scanned) {
      for (const path of ['/branches', '/no/such/path']) {
        const answer = await rawExchange(`${method} ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        expect([method, path, answer.slice(0, 12)]).toEqual([method, path, expect.stringMatching(/^HTTP\/1\.1 4\d\d$/)]);
      }
    }
    const text = await t.app.get(MetricsService).registry.metrics();
    const labelled = new Set([...text.matchAll(/^results_http_request(?:s_total|_duration_seconds_count)\{[^}]*method="([^"]*)"/gm)].map((m) => m[1]));
    expect([...labelled].sort()).toEqual(['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT', 'other'].filter((m) => labelled.has(m)));
    expect(labelled).toContain('other');
    const count = (labels: string): number => sampleOf(text, 'results_http_requests_total', labels);
    expect(count('(?=.*method="other")(?=.*route="/branches")(?=.*status="405")[^}]*')).toBeGreaterThanOrEqual(scanned.length - 7);
  });

  it('answers a method a path does not have with 405 and Allow, and a path no route has with 404', async () => {
    const contract = JSON.parse(readFileSync(new URL('../../openapi/openapi.json', import.meta.url), 'utf8')) as { paths: Record<string, object> };
    for (const [template, operations] of Object.entries(contract.paths)) {
      const path = template.replace('{imageId}', '00000000-0000-4000-8000-000000000000');
      const methods = Object.keys(operations).map((m) => m.toUpperCase());
      const allowed = (methods.includes('GET') ? [...methods, 'HEAD'] : methods).sort((a, b) => ORDER.indexOf(a) - ORDER.indexOf(b));
      for (const wrong of ['GET', 'POST', 'PUT', 'DELETE', 'PATCH', 'OPTIONS'].filter((m) => !allowed.includes(m))) {
        const res = await request(t.http)[wrong.toLowerCase() as 'put'](path);
        expect({ wrong, path, status: res.status, allow: res.headers.allow }).toEqual({ wrong, path, status: 405, allow: allowed.join(', ') });
        const detail = `${wrong} is not allowed on ${path}; it answers ${allowed.join(', ')}.`;
        if (path === '/connect/token') {
          // Every answer of the token endpoint is OAuth JSON with no-store.
          expect({ type: res.headers['content-type'], cache: res.headers['cache-control'], pragma: res.headers.pragma }).toEqual({
            type: 'application/json; charset=utf-8',
            cache: 'no-store',
            pragma: 'no-cache',
          });
          expect(JSON.parse(res.text)).toEqual({ error: 'invalid_request', error_description: detail });
          continue;
        }
        expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(JSON.parse(res.text)).toMatchObject({ title: 'Method Not Allowed', status: 405, detail });
      }
    }
    for (const path of ['/Connect/Token', '/connect/token/']) {
      const res = await request(t.http).get(path);
      expect({ path, status: res.status, allow: res.headers.allow, type: res.headers['content-type'], error: (JSON.parse(res.text) as { error?: string }).error }).toEqual({
        path,
        status: 405,
        allow: 'POST',
        type: 'application/json; charset=utf-8',
        error: 'invalid_request',
      });
    }
    const unknown = await request(t.http).post('/visits/everything');
    expect(unknown.status).toBe(404);
    expect(unknown.headers.allow).toBeUndefined();
    // A method whose name holds a hyphen, as any other; and the query of a 404 is not said back.
    const search = await rawExchange('M-SEARCH /menus HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(search.split('\r\n')[0]).toBe('HTTP/1.1 405 Method Not Allowed');
    expect(search).toContain('\r\nAllow: GET, HEAD\r\n');
    const secret = await rawExchange('M-SEARCH /nowhere?client_secret=s3cr3t HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(secret.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
    expect(JSON.parse(secret.split('\r\n\r\n')[1])).toMatchObject({ status: 404, detail: 'No endpoint has the path /nowhere.' });
    expect(secret).not.toContain('s3cr3t');
    // HEAD's answer is GET's, headers and all, without the body.
    const [get, head] = [await request(t.http).get('/nowhere'), await request(t.http).head('/nowhere')];
    expect([get.status, head.status, head.headers['content-length']]).toEqual([404, 404, get.headers['content-length']]);
  });

  it.each([
    ['HTTP/2.0 in cleartext', 'GET /health/live HTTP/2.0\r\nHost: x\r\n\r\n'],
    ['a request line without a version, as HTTP/0.9 wrote it', 'GET /health/live\r\n\r\n'],
    // Versions Node's parser does not know at all: the same 505, not a 400 for a malformed request.
    ['HTTP/1.2', 'GET /health/live HTTP/1.2\r\nHost: x\r\n\r\n'],
    ['HTTP/3.0 in cleartext', 'GET /health/live HTTP/3.0\r\nHost: x\r\n\r\n'],
    // What a client with prior knowledge of HTTP/2 sends first (RFC 9113 §3.4).
    ["HTTP/2's connection preface", 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'],
  ])('answers a request line of a version it does not speak (%s) with a 505 problem, and closes', async (_what, raw) => {
    const answer = await rawExchange(raw);
    const [head, body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 505 HTTP Version Not Supported');
    expect(head.split('\r\n')).toContain('Connection: close');
    expect(JSON.parse(body)).toMatchObject({ status: 505, detail: 'The HTTP version of the request is not supported: send HTTP/1.1.' });
  });

  it('answers a transfer coding before chunked, which it does not apply, with a 501 problem', async () => {
    const answer = await rawExchange('POST /menus/dishes HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: gzip, chunked\r\nContent-Type: multipart/form-data; boundary=a\r\n\r\n0\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 501 Not Implemented');
    expect(JSON.parse(body)).toMatchObject({
      status: 501,
      detail: 'The request has a transfer coding the service does not apply: send its body with Transfer-Encoding: chunked alone, or with Content-Length.',
    });
  });

  it('answers a version that is no version (HTTP/1.10) as a malformed request, a 400 problem', async () => {
    const answer = await rawExchange('GET /health/live HTTP/1.10\r\nHost: x\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    expect(JSON.parse(body)).toMatchObject({ status: 400, detail: 'The request is not well-formed HTTP/1.1.' });
    // The refused request line is judged, not the first one of the bytes read with it.
    const pipelined = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /health/live HTTP/1.10\r\nHost: x\r\n\r\n');
    expect(pipelined.match(/HTTP\/1\.1 \d{3} /g)?.at(-1)).toBe('HTTP/1.1 400 ');
    const third = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\n\r\nGET /health/live HTTP/3.0\r\nHost: x\r\n\r\n');
    expect(third.match(/HTTP\/1\.1 \d{3} /g)?.at(-1)).toBe('HTTP/1.1 505 ');
  });

  it('answers a request asking to upgrade in HTTP/1.1 and closes, so one pipelined behind it is sent again, not left waiting', async () => {
    for (const [asked, path] of [
      ['Connection: Upgrade\r\nUpgrade: h2c', '/health/live'],
      ['Connection: keep-alive, Upgrade\r\nUpgrade: websocket', '/health/live'],
      ['Connection: Upgrade\r\nUpgrade: h2c', '/no-such-path'],
    ]) {
      // rawExchange gives what was sent once the service closed: before, it waited for the idle timeout (65 s).
      const answer = await rawExchange(`GET ${path} HTTP/1.1\r\nHost: x\r\n${asked}\r\n\r\nGET /health/live HTTP/1.1\r\nHost: x\r\n\r\n`);
      const statuses = answer.match(/HTTP\/1\.1 \d{3} /g);
      expect([asked, statuses]).toEqual([asked, [path === '/health/live' ? 'HTTP/1.1 200 ' : 'HTTP/1.1 404 ']]);
      expect(answer.split('\r\n\r\n')[0].split('\r\n')).toContain('Connection: close');
    }
    // A token request (answered ahead of Express) the same.
    const token = await rawExchange(
      'POST /connect/token HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: h2c\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 29\r\n\r\ngrant_type=client_credentials',
    );
    const tokenHead = token.split('\r\n\r\n')[0].split('\r\n');
    // 401 without a key, or 429 once this file's low rate limit (2 a minute) is spent.
    expect(tokenHead[0]).toMatch(/^HTTP\/1\.1 (401 Unauthorized|429 Too Many Requests)$/);
    expect(tokenHead).toContain('Connection: close');
    // Without Connection: upgrade, Upgrade alone asks for nothing: the connection stays open for the next request.
    const kept = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nUpgrade: h2c\r\n\r\nGET /health/live HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(kept.match(/HTTP\/1\.1 \d{3} /g)).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 200 ']);
  });

  it.each(['127.0.0.1:3000', '[::1]:3000', '[v1.fe80::a+en1]', 'results.example.com', 'results.example.com:', 'xn--bcher-kva.example', '', 'my_host.local'])(
    'serves a request whose Host is a host name or address with an optional port (%j)',
    async (host) => {
      const answer = await rawExchange(`GET /health/live HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
      expect(answer.endsWith('{"status":"ok"}')).toBe(true);
    },
  );

  it('serves HTTP/1.0', async () => {
    const answer = await rawExchange('GET /health/live HTTP/1.0\r\n\r\n');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
  });

  it('answers an Expect it cannot meet with a 417 problem', async () => {
    // Without Connection: close from the client: the service closes the connection itself.
    const answer = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 417 Expectation Failed');
    expect(lines).toEqual(
      expect.arrayContaining(['Content-Type: application/problem+json; charset=utf-8', 'Cache-Control: no-store', 'Connection: close', expect.stringMatching(/^X-Request-Id: [0-9a-f-]{36}$/)]),
    );
    expect(JSON.parse(body)).toMatchObject({ title: 'Expectation Failed', status: 417, detail: "The expectation 'foo' cannot be met; only 100-continue is supported." });
  });

  it('quotes an Expect holding a credential with the credential redacted, in the answer and the log', async () => {
    const logged = jest.spyOn(t.app.get(AppLogger), 'infoFields');
    const answer = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nExpect: 100-continue, svcs_k3Y-secret\r\n\r\n');
    const detail = "The expectation '100-continue, [redacted]' cannot be met; only 100-continue is supported.";
    expect(JSON.parse(answer.split('\r\n\r\n')[1])).toMatchObject({ status: 417, detail });
    expect(logged.mock.calls).toEqual([[expect.objectContaining({ res: { statusCode: 417 }, detail }), 'request refused before the application']]);
    expect(JSON.stringify(logged.mock.calls)).not.toContain('k3Y');
    logged.mockRestore();
  });

  it("answers it on the token endpoint in OAuth's form, as every error there", async () => {
    const answer = await rawExchange('POST /connect/token?x=1 HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Length: 0\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 417 Expectation Failed');
    expect(lines).toEqual(expect.arrayContaining(['Content-Type: application/json; charset=utf-8', 'Cache-Control: no-store', 'Pragma: no-cache', 'Connection: close']));
    expect(JSON.parse(body)).toEqual({ error: 'invalid_request', error_description: "The expectation 'foo' cannot be met; only 100-continue is supported." });
  });

  it.each(['/Connect/Token', '/connect/token/', '/CONNECT/TOKEN/', '/connect/%74oken'])(
    "answers it in OAuth's form on the token endpoint spelt %s, as the router takes that path",
    async (path) => {
      const answer = await rawExchange(`POST ${path} HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Length: 0\r\n\r\n`);
      const [head, body] = answer.split('\r\n\r\n');
      expect(head.split('\r\n')).toEqual(expect.arrayContaining(['HTTP/1.1 417 Expectation Failed', 'Content-Type: application/json; charset=utf-8']));
      expect(JSON.parse(body)).toEqual({ error: 'invalid_request', error_description: "The expectation 'foo' cannot be met; only 100-continue is supported." });
    },
  );

  it.each([
    ['"x\\y', '?x?y'],
    // Raw UTF-8 bytes, which Node reads as Latin-1: two characters, neither ASCII.
    ['é', '??'],
    ['a\tb', 'a?b'],
  ])("quotes an Expect of %j on the token endpoint with the characters an error_description may hold alone (RFC 6749 §5.2)", async (expectation, shown) => {
    const answer = await rawExchange(`POST /connect/token HTTP/1.1\r\nHost: x\r\nExpect: ${expectation}\r\nContent-Length: 0\r\n\r\n`);
    const [head, body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')).toEqual(expect.arrayContaining(['HTTP/1.1 417 Expectation Failed', 'Content-Type: application/json; charset=utf-8', 'Cache-Control: no-store']));
    expect(JSON.parse(body)).toEqual({ error: 'invalid_request', error_description: `The expectation '${shown}' cannot be met; only 100-continue is supported.` });
  });

  it.each(['100-continue, foo', 'foo, 100-continue', 'foo-100-continue', '100-continue;x=1'])(
    'answers an Expect of %j, which asks for more than 100-continue or another thing, with a 417 and no 100 Continue',
    async (expectation) => {
      const answer = await rawExchange(`POST /connect/token HTTP/1.1\r\nHost: x\r\nExpect: ${expectation}\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: 5\r\n\r\n`);
      expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 417 Expectation Failed');
      expect(answer).not.toContain('100 Continue');
    },
  );

  it('takes 100-continue in any case, with empty members around it, as the one expectation it meets', async () => {
    const answer = await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nExpect: , 100-Continue ,\r\nConnection: close\r\n\r\n');
    expect(answer.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(answer.endsWith('{"status":"ok"}')).toBe(true);
  });

  it('reads an http or https URL as the target as its path and query, an empty path as /', async () => {
    for (const target of ['http://x/health/live', 'HTTPS://x:443/health/live', 'http://x/%68ealth/live?a=1']) {
      const answer = await rawExchange(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      expect({ target, line: answer.split('\r\n')[0], body: answer.slice(answer.indexOf('\r\n\r\n') + 4) }).toEqual({ target, line: 'HTTP/1.1 200 OK', body: '{"status":"ok"}' });
    }
    const root = await rawExchange('GET http://x?SvcClientId=1 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect(root.split('\r\n')[0]).toBe('HTTP/1.1 404 Not Found');
    expect(JSON.parse(root.slice(root.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 404, detail: 'No endpoint has the path /.' });
    // The token endpoint's 417 is OAuth JSON however its URL is written.
    const expectation = await rawExchange('POST http://x/connect/token HTTP/1.1\r\nHost: x\r\nExpect: foo\r\nContent-Length: 0\r\n\r\n');
    expect(JSON.parse(expectation.slice(expectation.indexOf('\r\n\r\n') + 4))).toEqual({ error: 'invalid_request', error_description: "The expectation 'foo' cannot be met; only 100-continue is supported." });
  });

  it("answers a request target of '*' with a 400 unless it is OPTIONS's (RFC 9112 §3.2.4)", async () => {
    const answer = await rawExchange('GET * HTTP/1.1\r\nHost: x\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    expect(head.split('\r\n')).toEqual(expect.arrayContaining(['HTTP/1.1 400 Bad Request', 'Content-Type: application/problem+json; charset=utf-8', 'Connection: close']));
    expect(JSON.parse(body)).toMatchObject({ status: 400, detail: "The request target '*' is for OPTIONS alone: name a path." });
  });

  it('counts each request answered before the application by its status, where a dashboard sees them', async () => {
    const counted = async (status: number): Promise<number> => sampleOf(await t.app.get(MetricsService).registry.metrics(), 'results_http_refused_total', `status="${status}"`);
    const before = await Promise.all([505, 431, 501, 417, 400].map(counted));
    expect((await rawExchange('GET / HTTP/3.0\r\nHost: x\r\n\r\n')).split('\r\n')[0]).toBe('HTTP/1.1 505 HTTP Version Not Supported');
    expect((await rawExchange(`GET /branches HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`)).split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
    expect((await rawExchange('BREW / HTTP/1.1\r\nHost: x\r\n\r\n')).split('\r\n')[0]).toBe('HTTP/1.1 501 Not Implemented');
    expect((await rawExchange('GET /health/live HTTP/1.1\r\nHost: x\r\nExpect: foo\r\n\r\n')).split('\r\n')[0]).toBe('HTTP/1.1 417 Expectation Failed');
    expect((await rawExchange('GET * HTTP/1.1\r\nHost: x\r\n\r\n')).split('\r\n')[0]).toBe('HTTP/1.1 400 Bad Request');
    const after = await Promise.all([505, 431, 501, 417, 400].map(counted));
    expect(after.map((n, i) => n - before[i])).toEqual([1, 1, 1, 1, 1]);
  });

  it("answers OPTIONS * with a 200, no content and the methods the server's routes have in Allow (RFC 9110 §9.3.7)", async () => {
    const answer = await rawExchange('OPTIONS * HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    const [head, body] = answer.split('\r\n\r\n');
    const lines = head.split('\r\n');
    expect(lines[0]).toBe('HTTP/1.1 200 OK');
    expect(lines).toEqual(expect.arrayContaining(['Allow: GET, HEAD, POST', 'Content-Length: 0', 'Cache-Control: no-store', 'X-Content-Type-Options: nosniff']));
    expect(lines.some((line) => /^X-Request-Id: [0-9a-f-]{36}$/.test(line))).toBe(true);
    expect(body).toBe('');
  });
});

describe(`CORS when origins are configured, no trusted proxy (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ CORS_ORIGINS: 'https://bi.example.com' });
  });
  afterAll(async () => {
    await t.close();
  });

  it('routes a path whose unreserved characters are escaped as the path itself (RFC 3986 §6.2.2.2)', async () => {
    // The same endpoint: its 401 for a request without credentials, not a 404 for no endpoint.
    for (const path of ['/%62ranches?SvcClientId=1001', '/visits/%73tandard?SvcClientId=1001', '/%68ealth/live']) {
      const res = await request(t.http).get(path);
      const plain = await request(t.http).get(path.replace('%62', 'b').replace('%73', 's').replace('%68', 'h'));
      expect([path, res.status, res.headers['content-type'], res.headers['www-authenticate']]).toEqual([path, plain.status, plain.headers['content-type'], plain.headers['www-authenticate']]);
      expect([res.status, (res.body as { detail?: string }).detail]).toEqual([plain.status, (plain.body as { detail?: string }).detail]);
      expect(res.status).not.toBe(404);
    }
  });

  it('allows the configured origin with the API headers, and no other', async () => {
    const preflight = (origin: string) =>
      request(t.http)
        .options('/visits/standard')
        .set('Origin', origin)
        .set('Access-Control-Request-Method', 'GET')
        .set('Access-Control-Request-Headers', 'authorization,svc-api-key,if-none-match,if-match,x-requested-with');
    const allowed = await preflight('https://bi.example.com');
    expect(allowed.status).toBe(204);
    expect(allowed.headers['access-control-allow-origin']).toBe('https://bi.example.com');
    // Every request header the interface reads, the conditional ones included (If-Match is honoured where a validator is sent).
    expect(String(allowed.headers['access-control-allow-headers']).toLowerCase().split(',')).toEqual(
      // X-Requested-With, which Swagger UI's Authorize sends, from another origin too.
      expect.arrayContaining(['authorization', 'svc-api-key', 'if-none-match', 'if-match', 'x-requested-with']),
    );
    const refused = await preflight('https://evil.example.net');
    expect(refused.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('answers an OPTIONS that is no preflight as the routes do without CORS: a 405 with Allow (OAuth JSON on the token endpoint)', async () => {
    const visits = await request(t.http).options('/visits/standard');
    expect({ status: visits.status, allow: visits.headers.allow, type: visits.headers['content-type'] }).toEqual({
      status: 405,
      allow: 'GET, HEAD',
      type: 'application/problem+json; charset=utf-8',
    });
    const token = await request(t.http).options('/connect/token').set('Origin', 'https://bi.example.com');
    expect({ status: token.status, allow: token.headers.allow, cache: token.headers['cache-control'], error: (JSON.parse(token.text) as { error?: string }).error }).toEqual({
      status: 405,
      allow: 'POST',
      cache: 'no-store',
      error: 'invalid_request',
    });
    // From an allowed origin the page can read it.
    expect(token.headers['access-control-allow-origin']).toBe('https://bi.example.com');
    const preflight = await request(t.http).options('/connect/token').set('Origin', 'https://bi.example.com').set('Access-Control-Request-Method', 'POST');
    expect(preflight.status).toBe(204);
    // A preflight is sent by a browser, with the page's Origin: without one it is an OPTIONS like any other.
    const originless = await request(t.http).options('/visits/standard').set('Access-Control-Request-Method', 'GET');
    expect({ status: originless.status, allow: originless.headers.allow }).toEqual({ status: 405, allow: 'GET, HEAD' });
  });

  it('gives a 417, whose request was read whole, the CORS headers of the allowed origin', async () => {
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const exchange = (origin: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.write(`GET /health/live HTTP/1.1\r\nHost: x\r\nOrigin: ${origin}\r\nExpect: foo\r\n\r\n`));
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
        socket.on('close', () => resolve(received.split('\r\n\r\n')[0]));
        socket.on('error', reject);
      });
    const allowed = (await exchange('https://bi.example.com')).split('\r\n');
    expect(allowed).toEqual(expect.arrayContaining(['HTTP/1.1 417 Expectation Failed', 'Access-Control-Allow-Origin: https://bi.example.com']));
    const other = await exchange('https://evil.example.net');
    expect(other.split('\r\n')[0]).toBe('HTTP/1.1 417 Expectation Failed');
    expect(other).not.toMatch(/access-control-allow-origin/i);
  });

  it('lets a browser read the rate-limit, retry and challenge headers', async () => {
    const res = await request(t.http).get('/branches?SvcClientId=1001').set('Origin', 'https://bi.example.com');
    expect(res.status).toBe(401);
    expect(res.headers['x-rate-limit-limit']).toBe(String(t.config.RATE_LIMIT_PER_MINUTE));
    const exposed = String(res.headers['access-control-expose-headers']).split(',');
    expect(exposed).toEqual(
      expect.arrayContaining(['RateLimit', 'RateLimit-Policy', 'X-Rate-Limit-Limit', 'X-Rate-Limit-Remaining', 'X-Rate-Limit-Reset', 'Retry-After', 'WWW-Authenticate', 'Allow']),
    );
    const wrongMethod = await request(t.http).post('/visits/standard').set('Origin', 'https://bi.example.com');
    expect(wrongMethod.status).toBe(405);
    expect(String(wrongMethod.headers['access-control-expose-headers']).split(',')).toContain('Allow');
  });

  it('takes X-Forwarded-Proto only from a trusted proxy: no HSTS for a direct plain-http request claiming https', async () => {
    const res = await request(t.http).get('/health/live').set('X-Forwarded-Proto', 'https');
    expect(res.status).toBe(200);
    expect(res.headers['strict-transport-security']).toBeUndefined();
    expect(res.headers['content-security-policy']).not.toContain('upgrade-insecure-requests');
  });
});

describe(`a client that half-closes its connection (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp();
    await t.app.listen(0, '127.0.0.1');
  });
  afterAll(async () => {
    await t.close();
  });

  it('answers a client that closes its side of the connection once it has sent its requests (a half-close)', async () => {
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const halfClosed = (raw: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const socket = connect(port, '127.0.0.1', () => socket.end(raw));
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
        socket.on('close', () => resolve(received));
        socket.on('error', reject);
      });
    // Answers that wait on the database, one alone and two pipelined, and the token lane's.
    const ready = await halfClosed('GET /health/ready HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(ready.split('\r\n')[0]).toBe('HTTP/1.1 200 OK');
    expect(JSON.parse(ready.slice(ready.indexOf('\r\n\r\n') + 4))).toMatchObject({ status: 'ok' });
    const two = await halfClosed('GET /health/ready HTTP/1.1\r\nHost: x\r\n\r\nGET /branches HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(two.match(/HTTP\/1\.1 \d{3} /g)).toEqual(['HTTP/1.1 200 ', 'HTTP/1.1 401 ']);
    const form = 'grant_type=client_credentials&client_id=svc_none&client_secret=x';
    const token = await halfClosed(
      `POST /connect/token HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-www-form-urlencoded\r\nContent-Length: ${form.length}\r\n\r\n${form}`,
    );
    expect(token.split('\r\n')[0]).toBe('HTTP/1.1 401 Unauthorized');
    expect(JSON.parse(token.slice(token.indexOf('\r\n\r\n') + 4))).toMatchObject({ error: 'invalid_client' });
  });
});
