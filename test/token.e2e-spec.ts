import { request as httpRequest } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { gzipSync } from 'node:zlib';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuthCacheService } from '../src/auth/auth-cache.service.js';
import { CredentialsService, type IssuedCredential } from '../src/auth/credentials.service.js';
import { Credential } from '../src/auth/entities/credential.entity.js';
import { scryptSecretHash } from '../src/auth/secrets.js';
import { issueCredential, seedClients } from './helpers/auth.js';
import { rawRequest } from './helpers/raw-http.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { onPostgres } from './helpers/test-config.js';

const ALL = 'svc-results-api visits/standard.read visits/plus.read branches/standard.read menus/standard.read menus/dishes/standard.write';

describe(`POST /connect/token (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let other: IssuedCredential;

  beforeAll(async () => {
    t = await startTestApp({ TOKEN_FAILURES_MAX: '5', PUBLIC_BASE_URL: 'https://results.example.test' });
    await seedClients(t);
    partner = await issueCredential(t);
    other = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
  });
  afterAll(async () => {
    await t.close();
  });

  const post = (form: Record<string, string> | string, apiKey: string | null = partner.apiKey) => {
    const req = request(t.http).post('/connect/token').type('form');
    if (apiKey !== null) void req.set('svc-api-key', apiKey);
    return req.send(form);
  };
  const creds = (c: IssuedCredential = partner) => ({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret });

  function expectOAuthError(res: request.Response, status: number, error: string, description: string | RegExp): void {
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body).toEqual({ error, error_description: expect.stringMatching(description) });
  }

  it('issues a token for client_secret_post with every assigned scope, not cacheable', async () => {
    const res = await post(creds());
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.headers.pragma).toBe('no-cache');
    expect(res.body).toEqual({ access_token: expect.any(String), expires_in: 3600, token_type: 'Bearer', scope: ALL });
  });

  it('issues an RFC 9068 JWT: at+jwt, ES256, kid, and every required claim', async () => {
    const before = Math.floor(Date.now() / 1000);
    const { access_token: token } = (await post(creds())).body as { access_token: string };
    const header = decodeProtectedHeader(token);
    expect(header).toEqual({ alg: 'ES256', typ: 'at+jwt', kid: expect.stringMatching(/^[\w-]{43}$/) });
    const claims = decodeJwt(token);
    expect(claims).toEqual({
      iss: 'https://results.example.test',
      aud: 'svc-results-api',
      sub: partner.clientId,
      client_id: partner.clientId,
      iat: expect.any(Number),
      exp: expect.any(Number),
      jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
      scope: ALL,
    });
    expect(claims.iat).toBeGreaterThanOrEqual(before);
    expect(claims.exp! - claims.iat!).toBe(3600);
    const again = decodeJwt((await post(creds())).body.access_token as string);
    expect(again.jti).not.toBe(claims.jti);
  });

  it('accepts client_secret_basic, with the Basic parts form-encoded', async () => {
    const basic = Buffer.from(`${encodeURIComponent(partner.clientId)}:${encodeURIComponent(partner.clientSecret)}`).toString('base64');
    const res = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Basic ${basic}`)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expect(res.status).toBe(200);
    expect(res.body.token_type).toBe('Bearer');
  });

  it('answers a JSON body as any body that is no form, whether it parses, names a charset or is large', async () => {
    // The token endpoint reads a form only: JSON there was judged as JSON first, and told a partner
    // its JSON did not parse, that 'the form' named another charset, or that 'the form' was over 16 KiB.
    const json = (body: string, type = 'application/json') =>
      request(t.http).post('/connect/token').set('svc-api-key', partner.apiKey).set('Content-Type', type).send(body);
    const cases: [string, request.Response][] = [
      ['parses', await json(JSON.stringify(creds()))],
      ['does not parse', await json('{"grant_type": "client_credentials",')],
      ['names another charset', await json(JSON.stringify(creds()), 'application/json; charset=latin1')],
      ['is over the JSON limit', await json(JSON.stringify({ ...creds(), padding: 'x'.repeat(70 * 1024) }))],
      ['on another spelling of the path', await request(t.http).post('/Connect/Token/').set('svc-api-key', partner.apiKey).set('Content-Type', 'application/json').send('{bad')],
    ];
    for (const [what, res] of cases) {
      expect({ what, status: res.status, body: res.body as unknown }).toEqual({
        what,
        status: 400,
        body: { error: 'invalid_request', error_description: 'The request body must be application/x-www-form-urlencoded.' },
      });
      expect(res.headers['cache-control']).toBe('no-store');
    }
  });

  it('refuses Basic credentials that are not form-encoded properly with invalid_client', async () => {
    const res = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Basic ${Buffer.from('svc_%ZZ:secret').toString('base64')}`)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expectOAuthError(res, 401, 'invalid_client', 'The Basic credentials are malformed.');
    expect(res.headers['www-authenticate']).toBe('Basic realm="svc-results-api", charset="UTF-8"');
  });

  it('refuses both client authentication methods at once with invalid_request', async () => {
    const basic = Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString('base64');
    const res = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Basic ${basic}`)
      .type('form')
      .send(creds());
    expectOAuthError(res, 400, 'invalid_request', 'Send the client credentials either in the Authorization header or in the body, not both.');
  });

  it('refuses two Authorization headers with invalid_request', async () => {
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const basic = `Basic ${Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString('base64')}`;
    const body = new URLSearchParams({ grant_type: 'client_credentials' }).toString();
    const answer = await new Promise<{ status: number; headers: Record<string, unknown>; json: unknown }>((resolve, reject) => {
      const req = httpRequest({ port, host: '127.0.0.1', method: 'POST', path: '/connect/token' }, (res) => {
        let text = '';
        res.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, json: JSON.parse(text) }));
      });
      req.on('error', reject);
      req.setHeader('svc-api-key', partner.apiKey);
      req.setHeader('Content-Type', 'application/x-www-form-urlencoded');
      // Two header lines: the first the client's own credentials.
      req.setHeader('Authorization', [basic, 'Basic b3RoZXI6c2VjcmV0']);
      req.end(body);
    });
    expect(answer).toEqual({
      status: 400,
      headers: expect.objectContaining({ 'cache-control': 'no-store', 'content-type': 'application/json; charset=utf-8' }),
      json: { error: 'invalid_request', error_description: 'The request has more than one Authorization header; it must have one.' },
    });
  });

  it('grants exactly the requested scopes when they include svc-results-api', async () => {
    const res = await post({ ...creds(), scope: 'svc-results-api  visits/standard.read' });
    expect(res.status).toBe(200);
    expect(res.body.scope).toBe('svc-results-api visits/standard.read');
    expect(decodeJwt(res.body.access_token as string).scope).toBe('svc-results-api visits/standard.read');
  });

  it.each([
    ['visits/standard.read', "A requested scope must include 'svc-results-api'."],
    ['svc-results-api visits/everything', 'Unknown scope: visits/everything.'],
    // An API key pasted into the scope: the answer, which clients log, does not quote it back.
    ['svc-results-api svck_0123456789abcdefghijABCDEFGHIJ_-xyz', /^Unknown scope: \[redacted\]\.$/],
  ])('refuses scope %j with invalid_scope', async (scope, description) => {
    expectOAuthError(await post({ ...creds(), scope }), 400, 'invalid_scope', description);
  });

  it('refuses a scope that is not assigned to the client with invalid_scope', async () => {
    const res = await post({ ...creds(other), scope: 'svc-results-api branches/standard.read' }, other.apiKey);
    expectOAuthError(res, 400, 'invalid_scope', 'Scope not assigned to this client: branches/standard.read.');
  });

  it('refuses a missing or wrong grant type', async () => {
    const { grant_type: _g, ...rest } = creds();
    expectOAuthError(await post(rest), 400, 'invalid_request', "The parameter 'grant_type' is required.");
    expectOAuthError(await post({ ...creds(), grant_type: 'password' }), 400, 'unsupported_grant_type', "Only the 'client_credentials' grant is supported.");
  });

  it('refuses a body that is not form-encoded', async () => {
    const res = await request(t.http).post('/connect/token').set('svc-api-key', partner.apiKey).send(creds());
    expectOAuthError(res, 400, 'invalid_request', 'The request body must be application/x-www-form-urlencoded.');
  });

  it('reads a form request with neither Content-Length nor Transfer-Encoding as an empty form, as it reads Content-Length: 0', async () => {
    const server = t.app.getHttpServer();
    if (!server.listening) await t.app.listen(0, '127.0.0.1');
    const { port } = server.address() as AddressInfo;
    const basic = `Basic ${Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString('base64')}`;
    const exchange = (framing: string): Promise<string> =>
      new Promise((resolve, reject) => {
        const head = `POST /connect/token HTTP/1.1\r\nHost: x\r\nsvc-api-key: ${partner.apiKey}\r\nAuthorization: ${basic}\r\nContent-Type: application/x-www-form-urlencoded\r\n${framing}Connection: close\r\n\r\n`;
        const socket = connect(port, '127.0.0.1', () => socket.write(head));
        let received = '';
        socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
        socket.on('close', () => resolve(received));
        socket.on('error', reject);
      });
    for (const framing of ['', 'Content-Length: 0\r\n']) {
      const [head, body] = (await exchange(framing)).split('\r\n\r\n');
      expect([framing, head.split('\r\n')[0], JSON.parse(body)]).toEqual([
        framing,
        'HTTP/1.1 400 Bad Request',
        { error: 'invalid_request', error_description: "The parameter 'grant_type' is required." },
      ]);
    }
  });

  it('refuses a parameter given twice', async () => {
    const body = `grant_type=client_credentials&client_id=${partner.clientId}&client_secret=${partner.clientSecret}&scope=a&scope=b`;
    expectOAuthError(await post(body), 400, 'invalid_request', "The parameter 'scope' must be given once, as text.");
  });

  it('refuses a missing, unknown or foreign svc-api-key with 401', async () => {
    expectOAuthError(await post(creds(), null), 401, 'invalid_client', 'The svc-api-key header is required.');
    expectOAuthError(await post(creds(), 'svck_unknown'), 401, 'invalid_client', 'The svc-api-key is not valid.');
    expectOAuthError(await post(creds(), other.apiKey), 401, 'invalid_client', 'The svc-api-key does not belong to this client.');
  });

  it('treats a parameter sent without a value as omitted (RFC 6749 §3.1)', async () => {
    const all = await post({ ...creds(), scope: '' });
    expect(all.status).toBe(200);
    expect(all.body.scope).toBe(ALL);
    // Beside a value of the same parameter too: an empty one is no second value.
    const form = new URLSearchParams(creds()).toString();
    for (const [body, scope] of [
      [`${form}&scope=&scope=svc-results-api`, 'svc-results-api'],
      [`${form}&grant_type&scope=svc-results-api&scope`, 'svc-results-api'],
      [`${form}&scope=&scope=`, ALL],
    ]) {
      const res = await post(body);
      expect({ body, status: res.status, scope: res.body.scope }).toEqual({ body, status: 200, scope });
    }
    const basic = `Basic ${Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString('base64')}`;
    for (const extra of ['client_secret=', 'client_id=', 'client_id=&client_secret=&scope=']) {
      const res = await request(t.http)
        .post('/connect/token')
        .set('svc-api-key', partner.apiKey)
        .set('Authorization', basic)
        .type('form')
        .send(`grant_type=client_credentials&${extra}`);
      expect({ extra, status: res.status, scope: res.body.scope }).toEqual({ extra, status: 200, scope: ALL });
    }
    expectOAuthError(await post({ ...creds(), grant_type: '' }), 400, 'invalid_request', "The parameter 'grant_type' is required.");
    expectOAuthError(await post({ ...creds(), client_secret: '' }), 401, 'invalid_client', 'Client authentication is required: client_id and client_secret.');
  });

  it('challenges Basic as well as the API key when a Basic request has a bad svc-api-key', async () => {
    const basic = `Basic ${Buffer.from(`${partner.clientId}:${partner.clientSecret}`).toString('base64')}`;
    for (const apiKey of [undefined, 'svck_unknown', other.apiKey]) {
      const req = request(t.http).post('/connect/token').set('Authorization', basic).type('form');
      if (apiKey !== undefined) void req.set('svc-api-key', apiKey);
      const res = await req.send({ grant_type: 'client_credentials' });
      expectOAuthError(res, 401, 'invalid_client', /^The svc-api-key /);
      expect(res.headers['www-authenticate']).toBe('ApiKey realm="svc-results-api", header="svc-api-key", Basic realm="svc-results-api", charset="UTF-8"');
    }
  });

  it('answers a form it cannot read in OAuth JSON with no-store, as every other refusal', async () => {
    const big = await post(`${new URLSearchParams(creds()).toString()}&padding=${'x'.repeat(20 * 1024)}`);
    expectOAuthError(big, 413, 'invalid_request', /^The form is larger than the service accepts \(16 KiB\)\.$/);
    const charset = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .set('Content-Type', 'application/x-www-form-urlencoded; charset=utf-16')
      .send(new URLSearchParams(creds()).toString());
    expectOAuthError(charset, 415, 'invalid_request', /^The form names a charset other than utf-8 or iso-8859-1\.$/);
    // A form whose bytes cannot be read at all (gzip that is not): a 400 saying so, the OAuth way.
    const unreadable = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .set('Content-Encoding', 'gzip')
      .send('grant_type=client_credentials');
    expectOAuthError(unreadable, 400, 'invalid_request', /^The request body cannot be decoded as its Content-Encoding says\.$/);
    // A small form of more fields than the service reads is no form too large.
    const fields = await post(`${'&'.repeat(1200)}${new URLSearchParams(creds()).toString()}`);
    expectOAuthError(fields, 400, 'invalid_request', /^The form has more fields than the service accepts \(1000\)\.$/);
    expect((await post(`${'&'.repeat(900)}${new URLSearchParams(creds()).toString()}`)).status).toBe(200);
    // A content coding the service does not read is said as such, not as a charset.
    const zstd = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .set('Content-Type', 'application/x-www-form-urlencoded')
      .set('Content-Encoding', 'zstd')
      .send(new URLSearchParams(creds()).toString());
    expectOAuthError(zstd, 415, 'invalid_request', "The request body's Content-Encoding is not one the service reads: send it as it is, or as gzip, deflate or br.");
    // ... and Accept-Encoding names those it reads (RFC 9110 §15.5.16).
    expect(zstd.headers['accept-encoding']).toBe('gzip, deflate, br');
  });

  it('refuses a form whose escapes mean no text, naming the field, before any credential is looked at', async () => {
    const form = new URLSearchParams(creds()).toString();
    for (const [body, description] of [
      [`${form}&scope=a%ZZ`, "The form field 'scope' holds a '%' that starts no percent-escape: send '%' as %25."],
      [form.replace('client_id=', 'client_id=%'), "The form field 'client_id' holds a '%' that starts no percent-escape: send '%' as %25."],
      [`${form}&scope=%C3%28`, "The form field 'scope' holds percent-escapes whose bytes are not UTF-8."],
      [`${form}&sc%6Fpe=%FF`, "The form field 'scope' holds percent-escapes whose bytes are not UTF-8."],
    ] as const) {
      expectOAuthError(await post(body), 400, 'invalid_request', description);
    }
    // The description holds printable ASCII but '"' and '\' only (RFC 6749 §5.2): a name's other characters are shown as '?'.
    for (const [body, description] of [
      [`${form}&a%0Ab=%FF`, "The form field 'a?b' holds percent-escapes whose bytes are not UTF-8."],
      [`${form}&%1B%5B31m%E2%80%AEx=%FF`, "The form field '?[31m?x' holds percent-escapes whose bytes are not UTF-8."],
      [`${form}&%22%5C%C3%A9=%FF`, "The form field '???' holds percent-escapes whose bytes are not UTF-8."],
      [`${form}&${'n'.repeat(41)}=%FF`, `The form field '${'n'.repeat(40)}?' holds percent-escapes whose bytes are not UTF-8.`],
    ]) {
      const res = await post(body);
      expect({ status: res.status, body: res.body as unknown }).toEqual({ status: 400, body: { error: 'invalid_request', error_description: description } });
    }
    // Bytes that are no UTF-8, sent as they are, in a form that says (or defaults to) UTF-8.
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const sendBytes = async (contentType: string, body: Buffer) => {
      const res = await rawRequest(t.app.getHttpServer(), '/connect/token', { 'svc-api-key': partner.apiKey, 'content-type': contentType }, 'POST', body);
      return { status: res.status, type: res.headers['content-type'], body: JSON.parse(res.body.toString('utf8')) as unknown };
    };
    const latin1 = Buffer.concat([Buffer.from(`${form}&scope=`), Buffer.from([0xe9])]);
    expect(await sendBytes('application/x-www-form-urlencoded', latin1)).toEqual({
      status: 400,
      type: 'application/json; charset=utf-8',
      body: { error: 'invalid_request', error_description: 'The form is not UTF-8 text: send its bytes as UTF-8, or name its charset (iso-8859-1).' },
    });
    // In a form that names iso-8859-1 every byte is a character, escaped or not: only a lone '%' is refused.
    const named = await sendBytes('application/x-www-form-urlencoded; charset=iso-8859-1', Buffer.concat([Buffer.from(`${form}&scope=svc-results-api+%E9`), Buffer.from([0xe9])]));
    expect(named).toEqual({ status: 400, type: 'application/json; charset=utf-8', body: { error: 'invalid_scope', error_description: 'The scope holds U+00E9, which no scope has: scopes are separated by spaces only.' } });
    const lone = await sendBytes('application/x-www-form-urlencoded; charset=iso-8859-1', Buffer.from(`${form}&scope=%E`));
    expect(lone.body).toEqual({ error: 'invalid_request', error_description: "The form field 'scope' holds a '%' that starts no percent-escape: send '%' as %25." });
    // A '%' sent as %25 and U+FFFD sent as its escapes are text: the form is read.
    const fine = await post(`${form}&extra=100%25&other=%EF%BF%BD`);
    expect(fine.status).toBe(200);
  });

  it.each(['gzip', 'x-gzip', 'X-GZIP'])('reads a form sent with Content-Encoding %s', async (coding) => {
    const form = gzipSync(new URLSearchParams(creds()).toString());
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const res = await rawRequest(t.app.getHttpServer(), '/connect/token', { 'svc-api-key': partner.apiKey, 'content-type': 'application/x-www-form-urlencoded', 'content-encoding': coding }, 'POST', form);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body.toString('utf8'))).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, scope: ALL });
  });

  it('refuses missing client authentication with invalid_client and a Basic challenge, after the svc-api-key', async () => {
    const missing = await post({ grant_type: 'client_credentials' });
    expectOAuthError(missing, 401, 'invalid_client', 'Client authentication is required: client_id and client_secret.');
    expect(missing.headers['www-authenticate']).toBe('Basic realm="svc-results-api", charset="UTF-8"');
    const emptyBasic = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', 'Basic')
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expectOAuthError(emptyBasic, 401, 'invalid_client', 'The Basic credentials are malformed.');
    expect(emptyBasic.headers['www-authenticate']).toBe('Basic realm="svc-results-api", charset="UTF-8"');
    // Basic of an empty id or secret (Og== is ":", what a login form left blank sends) is well-formed: what is missing is said.
    for (const pair of [':', `${partner.clientId}:`, `:${partner.clientSecret}`]) {
      const blank = await request(t.http)
        .post('/connect/token')
        .set('svc-api-key', partner.apiKey)
        .set('Authorization', `Basic ${Buffer.from(pair).toString('base64')}`)
        .type('form')
        .send({ grant_type: 'client_credentials' });
      expectOAuthError(blank, 401, 'invalid_client', 'Client authentication is required: client_id and client_secret.');
      expect(blank.headers['www-authenticate']).toBe('Basic realm="svc-results-api", charset="UTF-8"');
    }
    for (const [apiKey, description] of [
      [null, 'The svc-api-key header is required.'],
      ['svck_unknown', 'The svc-api-key is not valid.'],
    ] as const) {
      const res = await post({ grant_type: 'client_credentials' }, apiKey);
      expectOAuthError(res, 401, 'invalid_client', description);
      expect(res.headers['www-authenticate']).toBe('ApiKey realm="svc-results-api", header="svc-api-key"');
    }
  });

  it('refuses form fields longer than the contract allows with invalid_request', async () => {
    expectOAuthError(await post({ ...creds(), client_id: 'c'.repeat(101) }), 400, 'invalid_request', "The parameter 'client_id' must be at most 100 characters.");
    expectOAuthError(await post({ ...creds(), client_secret: 's'.repeat(201) }), 400, 'invalid_request', "The parameter 'client_secret' must be at most 200 characters.");
    expectOAuthError(await post({ ...creds(), scope: `svc-results-api${' x'.repeat(500)}` }), 400, 'invalid_request', "The parameter 'scope' must be at most 1000 characters.");
  });

  it('refuses a wrong secret with invalid_client, and a Basic one with a Basic challenge', async () => {
    const posted = await post({ ...creds(other), client_secret: 'wrong' }, other.apiKey);
    expectOAuthError(posted, 401, 'invalid_client', 'Client authentication failed.');
    // No challenge for form credentials (RFC 6749 §5.2), so OAuth clients report the body's error.
    expect(posted.headers['www-authenticate']).toBeUndefined();
    const basic = Buffer.from(`${other.clientId}:wrong`).toString('base64');
    const res = await request(t.http)
      .post('/connect/token')
      .set('svc-api-key', other.apiKey)
      .set('Authorization', `Basic ${basic}`)
      .type('form')
      .send({ grant_type: 'client_credentials' });
    expectOAuthError(res, 401, 'invalid_client', 'Client authentication failed.');
    expect(res.headers['www-authenticate']).toBe('Basic realm="svc-results-api", charset="UTF-8"');
  });

  it('leaves Basic out of the challenges of an answer to a script in a browser page (X-Requested-With, Sec-Fetch-Mode), which would stop it for a login box', async () => {
    const basicPost = (apiKey: string, secret: string, scripted: boolean) => {
      const req = request(t.http)
        .post('/connect/token')
        .set('svc-api-key', apiKey)
        .set('Authorization', `Basic ${Buffer.from(`${other.clientId}:${secret}`).toString('base64')}`)
        .type('form');
      return (scripted ? req.set('X-Requested-With', 'XMLHttpRequest') : req).send({ grant_type: 'client_credentials' });
    };
    const wrong = await basicPost(other.apiKey, 'wrong', true);
    expectOAuthError(wrong, 401, 'invalid_client', 'Client authentication failed.');
    expect(wrong.headers['www-authenticate']).toBeUndefined();
    // A key refused on such a request keeps its own challenge, which no browser answers with a login box.
    const badKey = await basicPost('svck_unknown', 'wrong', true);
    expectOAuthError(badKey, 401, 'invalid_client', 'The svc-api-key is not valid.');
    expect(badKey.headers['www-authenticate']).toBe('ApiKey realm="svc-results-api", header="svc-api-key"');
    /** A request without client credentials, with the header that says who sent it. */
    const uncredentialed = (name: string, value: string) =>
      request(t.http).post('/connect/token').set('svc-api-key', partner.apiKey).set(name, value).type('form').send({ grant_type: 'client_credentials' });
    const missing = 'Client authentication is required: client_id and client_secret.';
    // A browser's fetch says so by Sec-Fetch-Mode too (Swagger UI's "Try it out").
    for (const [name, value] of [['X-Requested-With', 'XMLHttpRequest'], ['Sec-Fetch-Mode', 'cors'], ['Sec-Fetch-Mode', 'same-origin'], ['Sec-Fetch-Mode', 'no-cors']]) {
      const res = await uncredentialed(name, value);
      expectOAuthError(res, 401, 'invalid_client', missing);
      expect([name, value, res.headers['www-authenticate']]).toEqual([name, value, undefined]);
    }
    // A form the page posts itself (navigate) keeps the challenge: a person is there to answer it.
    const navigated = await uncredentialed('Sec-Fetch-Mode', 'navigate');
    expectOAuthError(navigated, 401, 'invalid_client', missing);
    expect(navigated.headers['www-authenticate']).toBe('Basic realm="svc-results-api", charset="UTF-8"');
    // The right secret is issued a token as always; and without the header the challenge stays.
    const issued = await basicPost(other.apiKey, other.clientSecret, true);
    expect([issued.status, issued.headers['cache-control'], issued.headers['www-authenticate']]).toEqual([200, 'no-store', undefined]);
    expect(issued.body).toEqual({ access_token: expect.any(String), token_type: 'Bearer', expires_in: 3600, scope: expect.any(String) });
    const plain = await basicPost(other.apiKey, 'wrong', false);
    expectOAuthError(plain, 401, 'invalid_client', 'Client authentication failed.');
    expect(plain.headers['www-authenticate']).toBe('Basic realm="svc-results-api", charset="UTF-8"');
  });

  it('slows secret guessing: after the allowed failures even the right secret waits', async () => {
    const victim = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
    for (let i = 0; i < 5; i++) {
      const res = await post({ ...creds(victim), client_secret: `guess-${i}` }, victim.apiKey);
      expect(res.status).toBe(401);
    }
    const res = await post(creds(victim), victim.apiKey);
    expectOAuthError(res, 429, 'slow_down', /^Too many failed token requests for this client; retry after (?:1 second|\d+ seconds)\.$/);
    expect(Number(res.headers['retry-after'])).toBeGreaterThan(800);
    expect((await post(creds(other), other.apiKey)).status).toBe(200);
  });

  it('does not count refusals of the svc-api-key towards the lockout: without the client\'s key a request is no guess of its secret', async () => {
    const victim = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
    for (let i = 0; i < 6; i++) {
      expectOAuthError(await post({ ...creds(victim), client_secret: `guess-${i}` }, other.apiKey), 401, 'invalid_client', 'The svc-api-key does not belong to this client.');
      expectOAuthError(await post({ ...creds(victim), client_secret: `guess-${i}` }, `svck_made_up_${i}`), 401, 'invalid_client', 'The svc-api-key is not valid.');
    }
    const res = await post(creds(victim), victim.apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer' });
  });

  it("does not count the right secret of a disabled credential as a failure: once enabled again it gets a token at once", async () => {
    const paused = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
    const credentials = t.app.get(CredentialsService);
    const cache = t.app.get(AuthCacheService);
    await credentials.disable(paused.clientId);
    cache.forgetCredential(paused.clientId);
    // A partner's job retrying through an outage: more tries than the lockout allows.
    for (let i = 0; i < 7; i++) expectOAuthError(await post(creds(paused), paused.apiKey), 401, 'invalid_client', 'Client authentication failed.');
    await credentials.enable(paused.clientId);
    cache.forgetCredential(paused.clientId);
    const res = await post(creds(paused), paused.apiKey);
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ token_type: 'Bearer' });
    // A wrong secret of a disabled credential still counts.
    await credentials.disable(paused.clientId);
    cache.forgetCredential(paused.clientId);
    for (let i = 0; i < 5; i++) expect((await post({ ...creds(paused), client_secret: `guess-${i}` }, paused.apiKey)).status).toBe(401);
    expectOAuthError(await post(creds(paused), paused.apiKey), 429, 'slow_down', /^Too many failed token requests for this client; retry after (?:1 second|\d+ seconds)\.$/);
  });

  it('answers a locked-out client id about the key first: without its key nobody learns of the lockout', async () => {
    const victim = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
    for (let i = 0; i < 5; i++) expect((await post({ ...creds(victim), client_secret: `guess-${i}` }, victim.apiKey)).status).toBe(401);
    expectOAuthError(await post(creds(victim), victim.apiKey), 429, 'slow_down', /^Too many failed token requests for this client; retry after (?:1 second|\d+ seconds)\.$/);
    expectOAuthError(await post(creds(victim), other.apiKey), 401, 'invalid_client', 'The svc-api-key does not belong to this client.');
  });

  describe('a secret stored in the older scrypt form', () => {
    const credentials = () => t.app.get(DataSource).getRepository(Credential);
    const storedHash = async (c: IssuedCredential) => (await credentials().findOneByOrFail({ clientId: c.clientId })).secretHash;
    const HMAC = /^hmac-sha256\$[0-9a-f]{64}$/;

    /** A credential as a database written before secrets were stored as HMAC holds it. */
    async function scryptCredential(): Promise<{ c: IssuedCredential; hash: string }> {
      const c = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
      const hash = await scryptSecretHash(c.clientSecret);
      await credentials().update({ clientId: c.clientId }, { secretHash: hash });
      return { c, hash };
    }

    it('gets a token, and is then stored as HMAC, with which the same secret works', async () => {
      const { c, hash } = await scryptCredential();
      const res = await post(creds(c), c.apiKey);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ access_token: expect.any(String), expires_in: 3600, token_type: 'Bearer', scope: 'svc-results-api visits/standard.read' });
      const upgraded = await storedHash(c);
      expect(upgraded).toMatch(HMAC);
      expect(upgraded).not.toBe(hash);
      // The credential cached by the request above holds the new hash, not the old one.
      expect((await t.app.get(AuthCacheService).credential(c.clientId))?.credential.secretHash).toBe(upgraded);

      const again = await post(creds(c), c.apiKey);
      expect(again.status).toBe(200);
      expect(decodeJwt(again.body.access_token as string).client_id).toBe(c.clientId);
      expect(await storedHash(c)).toBe(upgraded);
      expectOAuthError(await post({ ...creds(c), client_secret: 'wrong' }, c.apiKey), 401, 'invalid_client', 'Client authentication failed.');
    });

    it('refuses a wrong secret and keeps the scrypt hash', async () => {
      const { c, hash } = await scryptCredential();
      const res = await post({ ...creds(c), client_secret: `${c.clientSecret.slice(0, -1)}x` }, c.apiKey);
      expectOAuthError(res, 401, 'invalid_client', 'Client authentication failed.');
      expect(res.headers['www-authenticate']).toBeUndefined();
      expect(await storedHash(c)).toBe(hash);
    });

    it('refuses a bad svc-api-key before the secret is looked at: the hash stays as it was', async () => {
      const { c, hash } = await scryptCredential();
      const refusals: [string | null, string][] = [
        [null, 'The svc-api-key header is required.'],
        ['svck_unknown', 'The svc-api-key is not valid.'],
        [partner.apiKey, 'The svc-api-key does not belong to this client.'],
      ];
      for (const [apiKey, description] of refusals) {
        const res = await post(creds(c), apiKey);
        expectOAuthError(res, 401, 'invalid_client', description);
        expect(res.headers['www-authenticate']).toBe('ApiKey realm="svc-results-api", header="svc-api-key"');
      }
      // With a wrong secret too, the key is what is refused.
      expectOAuthError(await post({ ...creds(c), client_secret: 'wrong' }, null), 401, 'invalid_client', 'The svc-api-key header is required.');
      expect(await storedHash(c)).toBe(hash);

      expect((await post(creds(c), c.apiKey)).status).toBe(200);
      expect(await storedHash(c)).toMatch(HMAC);
    });

    it('still gets its token when the upgrade cannot be written, and is upgraded by a later request', async () => {
      const { c, hash } = await scryptCredential();
      const db = t.app.get(DataSource);
      // The database refuses to change a secret hash: a failure of its own, not a stand-in.
      await db.query(
        onPostgres()
          ? `ALTER TABLE credentials ADD CONSTRAINT frozen_secret_hash CHECK (secret_hash LIKE 'scrypt$%') NOT VALID`
          : `CREATE TRIGGER frozen_secret_hash BEFORE UPDATE OF secret_hash ON credentials BEGIN SELECT RAISE(ABORT, 'frozen'); END`,
      );
      try {
        const res = await post(creds(c), c.apiKey);
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ access_token: expect.any(String), expires_in: 3600, token_type: 'Bearer', scope: 'svc-results-api visits/standard.read' });
        expect(await storedHash(c)).toBe(hash);
      } finally {
        await db.query(onPostgres() ? 'ALTER TABLE credentials DROP CONSTRAINT frozen_secret_hash' : 'DROP TRIGGER frozen_secret_hash');
      }
      expect((await post(creds(c), c.apiKey)).status).toBe(200);
      expect(await storedHash(c)).toMatch(HMAC);
    });
  });

  describe('a rotated secret', () => {
    const credentials = () => t.app.get(CredentialsService);
    const rotate = async (c: IssuedCredential, keepOldHours: number) => {
      const { rotated } = await credentials().rotateSecret(c.clientId, keepOldHours);
      t.app.get(AuthCacheService).forgetCredential(c.clientId);
      return rotated;
    };

    it('authenticates with the new secret alone when the old one is not kept; tokens issued before keep working', async () => {
      const c = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
      const before = (await post(creds(c), c.apiKey)).body.access_token as string;
      const rotated = await rotate(c, 0);
      expect(rotated).toEqual({ clientId: c.clientId, clientSecret: expect.stringMatching(/^svcs_[\w-]{43}$/), previousSecretUntil: null });
      expectOAuthError(await post(creds(c), c.apiKey), 401, 'invalid_client', 'Client authentication failed.');
      const res = await post({ ...creds(c), client_secret: rotated.clientSecret }, c.apiKey);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ token_type: 'Bearer', scope: 'svc-results-api visits/standard.read' });
      const page = await request(t.http).get('/visits/standard?SvcClientId=1002&FromDate=2020-01-01&ToDate=2020-01-01&Skip=0&Take=1').set('svc-api-key', c.apiKey).auth(before, { type: 'bearer' });
      expect(page.status).toBe(200);
    });

    it('authenticates with both while the old one is kept, the old one until its time is up, and a second rotation ends the oldest', async () => {
      const c = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
      const first = await rotate(c, 2);
      expect(Date.parse(first.previousSecretUntil!) - Date.now()).toBeGreaterThan(7_100_000);
      expect(Date.parse(first.previousSecretUntil!) - Date.now()).toBeLessThanOrEqual(7_200_000);
      expect((await post(creds(c), c.apiKey)).status).toBe(200);
      expect((await post({ ...creds(c), client_secret: first.clientSecret }, c.apiKey)).status).toBe(200);
      // Its time up (moved back here), the old secret no longer authenticates; the new one does.
      await t.app.get(DataSource).getRepository(Credential).update({ clientId: c.clientId }, { previousSecretUntil: new Date(Date.now() - 1000) });
      t.app.get(AuthCacheService).forgetCredential(c.clientId);
      expectOAuthError(await post(creds(c), c.apiKey), 401, 'invalid_client', 'Client authentication failed.');
      expect((await post({ ...creds(c), client_secret: first.clientSecret }, c.apiKey)).status).toBe(200);
      // Two secrets at most: rotated again, the first rotation's new secret is the one kept, the original is gone.
      const second = await rotate(c, 1);
      expect((await post({ ...creds(c), client_secret: second.clientSecret }, c.apiKey)).status).toBe(200);
      expect((await post({ ...creds(c), client_secret: first.clientSecret }, c.apiKey)).status).toBe(200);
      expectOAuthError(await post(creds(c), c.apiKey), 401, 'invalid_client', 'Client authentication failed.');
    });

    it('refuses a time to keep the old secret outside 0 to 720 hours, changing nothing', async () => {
      const c = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
      for (const hours of [-1, 721, Number.NaN]) {
        await expect(credentials().rotateSecret(c.clientId, hours)).rejects.toThrow('--keep-old-hours must be a number of hours from 0 to 720');
      }
      await expect(credentials().rotateSecret('svc_nobody', 0)).rejects.toThrow("credential 'svc_nobody' does not exist");
      expect((await post(creds(c), c.apiKey)).status).toBe(200);
    });
  });

  describe('changes of one credential made at once', () => {
    it('keeps every update: each is made over the others, none overwrites one with what it read before', async () => {
      const credentials = t.app.get(CredentialsService);
      for (let round = 0; round < 6; round++) {
        const c = await issueCredential(t, { clients: [1001], scopes: ['visits/standard.read'] });
        await Promise.all([
          credentials.update(c.clientId, { brands: [5] }),
          credentials.update(c.clientId, { scopes: ['visits/standard.read', 'branches/standard.read'] }),
          credentials.update(c.clientId, { visitTypes: ['MV'] }),
          credentials.update(c.clientId, { name: `round ${round}` }),
        ]);
        const stored = (await credentials.list()).find((x) => x.clientId === c.clientId);
        expect({ round, stored }).toMatchObject({
          round,
          stored: { brands: [5], scopes: ['svc-results-api', 'visits/standard.read', 'branches/standard.read'], visitTypes: ['MV'], name: `round ${round}` },
        });
      }
    });

    it('leaves one of the secrets rotations made at once current, the secret it replaced kept, every other refused', async () => {
      const c = await issueCredential(t, { clients: [1002], scopes: ['visits/standard.read'] });
      const credentials = t.app.get(CredentialsService);
      const rotated = await Promise.all(Array.from({ length: 5 }, () => credentials.rotateSecret(c.clientId, 1)));
      t.app.get(AuthCacheService).forgetCredential(c.clientId);
      const secrets = [c.clientSecret, ...rotated.map((r) => r.rotated.clientSecret)];
      const accepted: string[] = [];
      for (const secret of secrets) if ((await post({ ...creds(c), client_secret: secret }, c.apiKey)).status === 200) accepted.push(secret);
      // The current secret and the one it replaced: each rotation replaced the secret it read, in turn (five
      // different ones), so the five form one chain from the original, whose last two authenticate.
      expect(accepted).toHaveLength(2);
      expect(accepted.filter((secret) => rotated.some((r) => r.rotated.clientSecret === secret))).toEqual(accepted);
      expect(new Set(rotated.map((r) => r.before.secretHash)).size).toBe(5);
    });
  });
});
