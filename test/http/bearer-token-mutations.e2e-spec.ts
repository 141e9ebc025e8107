import { connect, type AddressInfo } from 'node:net';
import fc from 'fast-check';
import request from 'supertest';
import { DataSource } from 'typeorm';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { propertyRuns } from '../helpers/property-runs.js';

const INSTANCE = /^urn:svc:api:results:error:[0-9a-f-]{36}$/;
const BASE64URL = [...'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'];
/** Characters a header may carry that a base64url token may not. */
const FOREIGN = [...'+/=.!%~*"\\ ,;:@$&\'()[]{}<>?#^`|', '\u0080', '\u00e9', '\u00ff'];
/** Any character Node lets a client put in a header value (visible ASCII, space, Latin-1). */
const headerChar = fc
  .integer({ min: 0x20, max: 0xff })
  .filter((c) => c !== 0x7f)
  .map((c) => String.fromCharCode(c));
const anyChar = fc.oneof(fc.constantFrom(...BASE64URL), fc.constantFrom(...FOREIGN), headerChar);

/** Every way one part of a token can be damaged: a real change of that part only. */
function damaged(part: string): fc.Arbitrary<string> {
  const gap = fc.nat({ max: part.length });
  const at = fc.nat({ max: Math.max(0, part.length - 1) });
  return fc
    .oneof(
      // characters added
      fc.tuple(gap, fc.array(anyChar, { minLength: 1, maxLength: 3 })).map(([i, cs]) => part.slice(0, i) + cs.join('') + part.slice(i)),
      // characters removed
      fc.tuple(at, fc.integer({ min: 1, max: 3 })).map(([i, n]) => part.slice(0, i) + part.slice(i + n)),
      // a character replaced
      fc.tuple(at, anyChar).map(([i, c]) => part.slice(0, i) + c + part.slice(i + 1)),
      // two characters swapped
      fc.tuple(at, at).map(([i, j]) => {
        const cs = [...part];
        [cs[i], cs[j]] = [cs[j], cs[i]];
        return cs.join('');
      }),
      // truncated, or empty
      fc.nat({ max: Math.max(0, part.length - 1) }).map((n) => part.slice(0, n)),
      fc.constant(''),
      // standard base64 instead of base64url, padded
      fc.constantFrom('=', '==').map((pad) => part.replace(/-/g, '+').replace(/_/g, '/') + pad),
      // huge (the whole request stays under Node's 16 KiB header limit)
      fc.integer({ min: 2_000, max: 12_000 }).map((n) => part.repeat(Math.ceil(n / part.length)).slice(0, n)),
    )
    .filter((changed) => changed !== part);
}

/**
 * A bearer token changed in any way, in any part, is refused with 401 invalid_token through
 * the real guards: never a 500, never accepted.
 */
describe(`malformed bearer tokens (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;
  let parts: [string, string, string];

  beforeAll(async () => {
    t = await startTestApp();
    await seedClients(t);
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
    parts = token.split('.') as [string, string, string];
  });
  afterAll(async () => {
    await t.close();
  });

  const branches = (authorization: string) =>
    request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', authorization);

  async function expectInvalidToken(bad: string): Promise<void> {
    const res = await branches(`Bearer ${bad}`);
    const seen = { status: res.status, challenge: res.headers['www-authenticate'], type: res.headers['content-type'] };
    expect(seen).toEqual({
      status: 401,
      challenge: expect.stringMatching(/^Bearer realm="svc-results-api", error="invalid_token", error_description="[^"\\]+"$/),
      type: 'application/problem+json; charset=utf-8',
    });
    const body = JSON.parse(res.text);
    expect(body).toEqual({ title: 'Unauthorized', status: 401, detail: expect.any(String), instance: expect.stringMatching(INSTANCE) });
    expect(res.headers['www-authenticate']).toContain(`error_description="${(body.detail as string).replace(/["\\]/g, '')}"`);
  }

  const withPart = (index: number, value: string): string => parts.map((p, i) => (i === index ? value : p)).join('.');

  /** A GET with the given header lines, on a connection of its own: its status line, headers and body. */
  async function rawGet(path: string, headerLines: string[]): Promise<{ status: number; headers: Record<string, string>; body: string }> {
    if (!t.app.getHttpServer().listening) await t.app.listen(0, '127.0.0.1');
    const { port } = t.app.getHttpServer().address() as AddressInfo;
    const raw = await new Promise<string>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n${headerLines.join('\r\n')}\r\n\r\n`));
      let received = '';
      socket.on('data', (chunk: Buffer) => (received += chunk.toString('utf8')));
      socket.on('close', () => resolve(received));
      socket.on('error', reject);
    });
    const [head, body] = raw.split('\r\n\r\n');
    const [statusLine, ...lines] = head.split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    return { status: Number(statusLine.split(' ')[1]), headers, body };
  }

  it('refuses two Authorization headers as a malformed credential, after the API key, counted and limited as any request', async () => {
    const twice = [`Authorization: Bearer ${token}`, `authorization: Bearer ${token}x`];
    const noKey = await rawGet('/branches?SvcClientId=1001', twice);
    expect(noKey.status).toBe(401);
    expect(noKey.headers['www-authenticate']).toMatch(/^ApiKey /);
    const res = await rawGet('/branches?SvcClientId=1001', [`svc-api-key: ${partner.apiKey}`, ...twice]);
    expect(res.status).toBe(401);
    expect(res.headers['www-authenticate']).toBe(
      'Bearer realm="svc-results-api", error="invalid_token", error_description="The request has more than one Authorization header; it must have one."',
    );
    expect(res.headers['ratelimit-policy']).toMatch(/"default";q=\d+/);
    expect(JSON.parse(res.body)).toEqual({
      title: 'Unauthorized',
      status: 401,
      detail: 'The request has more than one Authorization header; it must have one.',
      instance: expect.stringMatching(INSTANCE),
    });
    // The visit pages' own path answers the same (the first token alone would pass there).
    const visits = await rawGet('/visits/standard?SvcClientId=1001&FromDate=2026-01-01&ToDate=2026-01-02&Skip=0&Take=1', [
      `svc-api-key: ${partner.apiKey}`,
      ...twice,
    ]);
    expect([visits.status, JSON.parse(visits.body).detail]).toEqual([401, 'The request has more than one Authorization header; it must have one.']);
  });

  it('accepts the undamaged token (the refusals below are about the damage)', async () => {
    expect((await branches(`Bearer ${token}`)).status).toBe(200);
  });

  it.each([
    ['one character added to the signature', () => `${token}A`],
    ['two characters removed from the signature', () => token.slice(0, -2)],
    ['the signature cut in half', () => withPart(2, parts[2].slice(0, 43))],
    ['a signature of another length that decodes', () => withPart(2, `${parts[2]}AAAA`)],
    ['the last signature character re-encoded with different spare bits', () => withPart(2, parts[2].slice(0, -1) + sibling(parts[2].at(-1)!))],
    ['a trailing word after the token', () => `${token} x`],
    ['a payload that is not JSON', () => withPart(1, Buffer.from('{"client_id":').toString('base64url'))],
    ['a header that is not JSON', () => withPart(0, Buffer.from('{"alg":"ES256",').toString('base64url'))],
    ['a header whose typ is a number', () => withPart(0, Buffer.from(JSON.stringify({ alg: 'ES256', typ: 7, kid: 'k' })).toString('base64url'))],
    ['a header whose kid is an object', () => withPart(0, Buffer.from(JSON.stringify({ alg: 'ES256', typ: 'at+jwt', kid: {} })).toString('base64url'))],
    ['four parts', () => `${token}.${parts[2]}`],
    ['five parts', () => `${token}.${parts[1]}.${parts[2]}`],
    ['only dots', () => '..'],
  ])('refuses %s with 401 invalid_token', async (_name, make) => {
    await expectInvalidToken(make());
  });

  it.each([0, 1, 2])('refuses every damage to part %i (header, payload, signature) with 401 invalid_token', async (index) => {
    await fc.assert(
      fc.asyncProperty(damaged(parts[index]), async (part) => {
        const bad = withPart(index, part);
        // HTTP drops spaces and tabs at the end of a header value, and spaces before the token
        // separate it from `Bearer` (RFC 6750: 1*SP; tabs are taken alike): such a token arrives undamaged.
        fc.pre(bad.replace(/^[ \t]+/, '').replace(/[ \t]+$/, '') !== token);
        await expectInvalidToken(bad);
      }),
      propertyRuns(250),
    );
  });

  it('refuses dots added, removed or moved with 401 invalid_token', async () => {
    const dots = fc.oneof(
      fc.nat({ max: token.length }).map((i) => `${token.slice(0, i)}.${token.slice(i)}`),
      fc.constantFrom(0, 1).map((n) => parts.slice(0, n + 1).join('') + '.' + parts.slice(n + 1).join('.')),
      fc.constantFrom(0, 1).map((n) => parts.slice(0, n + 1).join('.') + parts.slice(n + 1).join('.')),
      fc.tuple(fc.nat({ max: token.length }), fc.nat({ max: token.length })).map(([a, b]) => {
        const stripped = token.replace(/\./g, '');
        const [i, j] = [Math.min(a, b, stripped.length), Math.min(Math.max(a, b), stripped.length)];
        return `${stripped.slice(0, i)}.${stripped.slice(i, j)}.${stripped.slice(j)}`;
      }),
      fc.array(fc.constantFrom('', ...parts), { minLength: 1, maxLength: 6 }).map((ps) => ps.join('.')),
    );
    await fc.assert(
      fc.asyncProperty(
        // An empty token is a missing one (a bare challenge, tested with the other auth cases).
        dots.filter((bad) => bad !== token && bad !== ''),
        async (bad) => {
          await expectInvalidToken(bad);
        },
      ),
      propertyRuns(200),
    );
  });
});

describe(`a bearer token while the signing keys cannot be read (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    // Signing keys are read from the database on every request.
    t = await startTestApp({ AUTH_CACHE_SECONDS: '0' });
    await seedClients(t);
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
  });
  afterAll(async () => {
    await t.close();
  });

  const branches = (authorization: string) =>
    request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', partner.apiKey).set('Authorization', authorization);

  it('keeps a failing keyring the service unavailable, not a 401', async () => {
    const runner = t.app.get(DataSource).createQueryRunner();
    // The signing keys' table gone (as before the migrations ran): the token is not judged at all.
    await runner.renameTable('signing_keys', 'signing_keys_away');
    try {
      const res = await branches(`Bearer ${token}`);
      expect(res.status).toBe(503);
      expect(res.headers['www-authenticate']).toBeUndefined();
      expect(res.headers['retry-after']).toBe('5');
      expect(JSON.parse(res.text)).toEqual({
        title: 'Service Unavailable',
        status: 503,
        detail: 'The database is unavailable; retry after the time in Retry-After.',
        instance: expect.stringMatching(INSTANCE),
      });
    } finally {
      await runner.renameTable('signing_keys_away', 'signing_keys');
      await runner.release();
    }
    expect((await branches(`Bearer ${token}`)).status).toBe(200);
  });
});

/** Another base64url character whose top two bits are the same: 86 characters carry 4 spare bits. */
function sibling(last: string): string {
  const i = BASE64URL.indexOf(last);
  return BASE64URL[(i & ~0xf) | ((i + 1) & 0xf)];
}
