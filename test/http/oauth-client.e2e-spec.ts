import { createPrivateKey, createPublicKey } from 'node:crypto';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  calculateJwkThumbprint,
  createRemoteJWKSet,
  decodeProtectedHeader,
  exportJWK,
  exportPKCS8,
  generateKeyPair,
  jwtVerify,
  type JWK,
} from 'jose';
import * as oidc from 'openid-client';
import request from 'supertest';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { cli, cliJson } from '../helpers/cli.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { startListeningTestApp, startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * The server as an OAuth client written by others sees it: openid-client discovers it
 * from its RFC 8414 metadata and runs the client-credentials grant; jose verifies the
 * token against the published JWKS.
 */
describe(`standard OAuth clients against the service (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let base: string;
  let partner: IssuedCredential;

  beforeAll(async () => {
    ({ t, base } = await startListeningTestApp({ AUTH_CACHE_SECONDS: '0' }));
    await seedClients(t);
    partner = await issueCredential(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const withApiKey =
    (apiKey: string): oidc.CustomFetch =>
    (url, options) =>
      fetch(url, { ...options, headers: { ...(options.headers), 'svc-api-key': apiKey } });

  async function discover(auth: oidc.ClientAuth): Promise<oidc.Configuration> {
    return oidc.discovery(new URL(base), partner.clientId, undefined, auth, {
      algorithm: 'oauth2',
      execute: [oidc.allowInsecureRequests],
      [oidc.customFetch]: withApiKey(partner.apiKey),
    });
  }

  async function verify(token: string) {
    const jwks = createRemoteJWKSet(new URL(`${base}/.well-known/jwks.json`));
    return jwtVerify(token, jwks, { issuer: base, audience: 'svc-results-api', typ: 'at+jwt', algorithms: ['ES256'] });
  }

  it('publishes RFC 8414 metadata that openid-client accepts', async () => {
    const config = await discover(oidc.ClientSecretPost(partner.clientSecret));
    // Nothing of JWT client authentication (RFC 8414 §2), which is not offered.
    expect(config.serverMetadata()).not.toHaveProperty('token_endpoint_auth_signing_alg_values_supported');
    expect(config.serverMetadata()).toMatchObject({
      issuer: base,
      token_endpoint: `${base}/connect/token`,
      jwks_uri: `${base}/.well-known/jwks.json`,
      grant_types_supported: ['client_credentials'],
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: expect.arrayContaining(['svc-results-api', 'visits/standard.read', 'menus/dishes/standard.write']),
    });
  });

  it.each([
    ['ClientSecretPost', oidc.ClientSecretPost],
    ['ClientSecretBasic', oidc.ClientSecretBasic],
  ])('obtains a token with %s that jose verifies against the JWKS', async (_name, method) => {
    const config = await discover(method(partner.clientSecret));
    const tokens = await oidc.clientCredentialsGrant(config, { scope: 'svc-results-api branches/standard.read' });
    expect(tokens.token_type).toBe('bearer');
    expect(tokens.expires_in).toBe(3600);
    expect(tokens.scope).toBe('svc-results-api branches/standard.read');
    const { payload, protectedHeader } = await verify(tokens.access_token);
    expect(protectedHeader).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
    expect(payload).toMatchObject({ client_id: partner.clientId, sub: partner.clientId, scope: 'svc-results-api branches/standard.read' });

    const res = await fetch(`${base}/branches?svcclientid=1001`, {
      headers: { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${tokens.access_token}` },
    });
    expect(res.status).toBe(200);
  });

  it('reports a wrong secret to openid-client as invalid_client', async () => {
    const config = await discover(oidc.ClientSecretPost('not-the-secret'));
    await expect(oidc.clientCredentialsGrant(config)).rejects.toMatchObject({ error: 'invalid_client', status: 401 });
  });

  it("answers what Ruby's oauth2 meets with its defaults as the README's notes on it say", async () => {
    // oauth2 1.4 asks /oauth/token unless given token_url, and Faraday writes an array parameter as name[]=.
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8').replace(/\s+/g, ' ');
    expect(readme).toContain("- **Ruby's oauth2** (1.4): give it `token_url: '/connect/token'` (its default, `/oauth/token`, is a 404 here)");
    const defaultPath = await request(base).post('/oauth/token').set('svc-api-key', partner.apiKey).type('form').send({ grant_type: 'client_credentials' });
    expect([defaultPath.status, defaultPath.headers['content-type'], (defaultPath.body as { detail: string }).detail]).toEqual([
      404,
      'application/problem+json; charset=utf-8',
      'No endpoint has the path /oauth/token.',
    ]);
    // Its OAuth2::Error reads application/json only: the problem's fields are in the body's JSON, as the note says.
    expect(readme).toContain('`code` and `description` are nil: read `error.response.status`');
    const token = await tokenFor(base, partner);
    const listed = await request(base)
      .get('/visits/standard/changes?SvcClientId=1001&Since=2026-11-01T00:00:00Z&VisitTypes%5B%5D=MV&VisitTypes%5B%5D=OF')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Bearer ${token}`);
    expect(listed.status).toBe(400);
    expect(readme).toContain("Faraday writes an array parameter as `VisitTypes[]=MV&VisitTypes[]=OF`, a 400: send `'VisitTypes' => 'MV,OF'`.");
  });

  it('keeps old tokens working across a rotation until the old key is retired', async () => {
    const config = await discover(oidc.ClientSecretBasic(partner.clientSecret));
    const before = (await oidc.clientCredentialsGrant(config)).access_token;
    const oldKid = decodeProtectedHeader(before).kid!;
    const call = (token: string) =>
      fetch(`${base}/branches?SvcClientId=1001`, { headers: { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${token}` } });

    const rotated = await cliJson<{ kid: string }>(['signing-keys', 'rotate', '--now'], t.env);
    expect(rotated.kid).not.toBe(oldKid);
    const after = (await oidc.clientCredentialsGrant(config)).access_token;
    expect(decodeProtectedHeader(after).kid).toBe(rotated.kid);
    expect((await call(before)).status).toBe(200);
    expect((await call(after)).status).toBe(200);
    const published = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: { kid: string }[] };
    expect(published.keys.map((k) => k.kid).sort()).toEqual([oldKid, rotated.kid].sort());

    await cliJson(['signing-keys', 'retire', oldKid], t.env);
    const refused = await call(before);
    expect(refused.status).toBe(401);
    expect(((await refused.json()) as { detail: string }).detail).toBe('The access token is signed by an unknown key.');
    expect((await call(after)).status).toBe(200);
    await expect(verify(before)).rejects.toThrow();
    expect((await verify(after)).payload.client_id).toBe(partner.clientId);
  });

  it('refuses to retire the key that signs', async () => {
    const keys = await cliJson<{ kid: string; signing: boolean }[]>(['signing-keys', 'list'], t.env);
    const signing = keys.find((k) => k.signing)!;
    await expect(cliJson(['signing-keys', 'retire', signing.kid], t.env)).rejects.toThrow(
      `'${signing.kid}' is the only active signing key: rotate first`,
    );
  });

  it('publishes a rotated key before it signs, so that a verifier that keeps the key set for its max-age knows it first', async () => {
    const config = await discover(oidc.ClientSecretBasic(partner.clientSecret));
    const signing = decodeProtectedHeader((await oidc.clientCredentialsGrant(config)).access_token).kid!;
    const rotated = await cliJson<{ kid: string; signsFrom: string }>(['signing-keys', 'rotate'], t.env);
    // 7 minutes: the key set's max-age, the longest AUTH_CACHE_SECONDS and a margin for clocks (whatever this process's setting, 0 here).
    const wait = Date.parse(rotated.signsFrom) - Date.now();
    expect(wait).toBeGreaterThan(400_000);
    expect(wait).toBeLessThanOrEqual(420_000);

    const jwks = await fetch(`${base}/.well-known/jwks.json`);
    expect(jwks.headers.get('cache-control')).toBe('public, max-age=300');
    const published = (await jwks.json()) as { keys: JWK[] };
    expect(published.keys.map((k) => k.kid).sort()).toEqual([signing, rotated.kid].sort());
    // Tokens are signed by the key that signed before, which every verifier knows.
    const token = (await oidc.clientCredentialsGrant(config)).access_token;
    expect(decodeProtectedHeader(token).kid).toBe(signing);
    expect((await verify(token)).payload.client_id).toBe(partner.clientId);
    const listed = await cli(['signing-keys', 'list'], t.env);
    expect(listed.stdout).toContain(`${rotated.kid}\tdatabase\tpublished, signs from ${rotated.signsFrom}\t`);
    expect(listed.stdout).toContain(`${signing}\tdatabase\tsigning\t`);

    // Called off: the published key is retired before it signs, and the one that signed goes on.
    expect(await cliJson(['signing-keys', 'retire', rotated.kid], t.env)).toEqual({ kid: rotated.kid, retired: true });
    const kept = (await (await fetch(`${base}/.well-known/jwks.json`)).json()) as { keys: JWK[] };
    expect(kept.keys.map((k) => k.kid)).toEqual([signing]);
    expect(decodeProtectedHeader((await oidc.clientCredentialsGrant(config)).access_token).kid).toBe(signing);
  });
});

describe(`signing keys from a mounted secret file (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let pem: string;
  let file: string;

  beforeAll(async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    pem = await exportPKCS8(privateKey);
    // A mounted secret file, as in Kubernetes; read again on every use (AUTH_CACHE_SECONDS=0).
    file = join(mkdtempSync(join(tmpdir(), 'keys-')), 'signing-keys.pem');
    writeFileSync(file, pem, { mode: 0o600 });
    t = await startTestApp({ JWT_SIGNING_KEYS_FILE: file, AUTH_CACHE_SECONDS: '0' });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('signs with the configured key, whose thumbprint is the kid, and refuses CLI rotation', async () => {
    const partner = await issueCredential(t);
    const token = await tokenFor(t.http, partner);
    const publicKey = createPublicKey(createPrivateKey(pem));
    const kid = await calculateJwkThumbprint(await exportJWK(publicKey));
    expect(decodeProtectedHeader(token).kid).toBe(kid);
    const { payload } = await jwtVerify(token, publicKey, { audience: 'svc-results-api' });
    expect(payload.client_id).toBe(partner.clientId);
    const published = (await request(t.http).get('/.well-known/jwks.json')).body as { keys: { kid: string; alg: string }[] };
    expect(published.keys).toEqual([expect.objectContaining({ kid, alg: 'ES256', kty: 'EC', crv: 'P-256', use: 'sig' })]);
    expect(JSON.stringify(published)).not.toMatch(/"d":/);
    await expect(cliJson(['signing-keys', 'rotate'], t.env)).rejects.toThrow(
      'signing keys come from JWT_SIGNING_KEYS: rotate by adding the new key after the current one in that secret, then putting it first 7 minutes later',
    );
  });
  it('keeps the keys read last when the file turns unreadable, or holds a key not in PKCS#8 first, and takes a good one again', async () => {
    const partner = await issueCredential(t);
    const kidOf = async (): Promise<string | undefined> => decodeProtectedHeader(await tokenFor(t.http, partner)).kid;
    const first = await kidOf();
    const { privateKey: next } = await generateKeyPair('ES256', { extractable: true });
    const nextPem = await exportPKCS8(next);
    const sec1 = createPrivateKey(nextPem).export({ format: 'pem', type: 'sec1' }).toString();
    try {
      // A broken Secret, or a new key in SEC1 form put first: no request fails, the old key still signs.
      for (const broken of ['garbage\n', `${sec1}${pem}`, '']) {
        writeFileSync(file, broken);
        expect(await kidOf()).toBe(first);
        const jwks = (await request(t.http).get('/.well-known/jwks.json')).body as { keys: { kid: string }[] };
        expect(jwks.keys.map((k) => k.kid)).toEqual([first]);
      }
    } finally {
      writeFileSync(file, `${nextPem}${pem}`);
    }
    const rotated = await kidOf();
    expect(rotated).not.toBe(first);
    expect(rotated).toBe(await calculateJwkThumbprint(await exportJWK(createPublicKey(createPrivateKey(nextPem)))));
  });
});
