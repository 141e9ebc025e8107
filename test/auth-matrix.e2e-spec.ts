import { generateKeyPair, SignJWT } from 'jose';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuthCacheService } from '../src/auth/auth-cache.service.js';
import { AuthRepository } from '../src/auth/auth.repository.js';
import { Credential } from '../src/auth/entities/credential.entity.js';
import { CredentialsService, type IssuedCredential } from '../src/auth/credentials.service.js';
import { KeyringService } from '../src/auth/keyring.service.js';
import { Menu } from '../src/menus/entities/menu.entity.js';
import { MenusRepository } from '../src/menus/menus.repository.js';
import { BranchesRepository } from '../src/branches/branches.repository.js';
import { Branch } from '../src/branches/entities/branch.entity.js';
import { ClientsService } from '../src/clients/clients.service.js';
import { makeImage } from './helpers/images.js';
import { issueCredential, seedClients, tokenFor } from './helpers/auth.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { importVisits } from './helpers/visits-fixture.js';

/**
 * A valid request for every protected operation. The matrix reads the operations from the
 * published contract, so an endpoint added without a sample here fails the first test.
 */
const VISITS_QUERY = 'FromDate=2024-01-01&ToDate=2024-01-31&Skip=0&Take=10';
const CHANGES_QUERY = `Since=${new Date(Date.now() - 86_400_000).toISOString()}`;
const SAMPLES: Record<string, { path: string; scope: string; upload?: true }> = {
  'GET /menus': { path: '/menus?SvcClientId=1001', scope: 'menus/standard.read' },
  'GET /menus/dishes': { path: '/menus/dishes?SvcClientId=1001&menuId=101', scope: 'menus/standard.read' },
  'POST /menus/dishes': { path: '/menus/dishes?SvcClientId=1001', scope: 'menus/dishes/standard.write', upload: true },
  'GET /menus/dishes/images/{imageId}': { path: '/menus/dishes/images/IMAGE?SvcClientId=1001', scope: 'menus/standard.read' },
  'GET /branches': { path: '/branches?SvcClientId=1001', scope: 'branches/standard.read' },
  'GET /visits/standard': { path: `/visits/standard?SvcClientId=1001&${VISITS_QUERY}`, scope: 'visits/standard.read' },
  'GET /visits/plus': { path: `/visits/plus?SvcClientId=1001&${VISITS_QUERY}`, scope: 'visits/plus.read' },
  'GET /visits/standard/changes': { path: `/visits/standard/changes?SvcClientId=1001&${CHANGES_QUERY}`, scope: 'visits/standard.read' },
  'GET /visits/plus/changes': { path: `/visits/plus/changes?SvcClientId=1001&${CHANGES_QUERY}`, scope: 'visits/plus.read' },
};
const FOREIGN: Record<string, string> = {
  'GET /menus': '/menus?SvcClientId=1002',
  'GET /menus/dishes': '/menus/dishes?SvcClientId=1002&menuId=101',
  'POST /menus/dishes': '/menus/dishes?SvcClientId=1002',
  'GET /menus/dishes/images/{imageId}': '/menus/dishes/images/IMAGE?SvcClientId=1002',
  'GET /branches': '/branches?SvcClientId=1002',
  'GET /visits/standard': `/visits/standard?SvcClientId=1002&${VISITS_QUERY}`,
  'GET /visits/plus': `/visits/plus?SvcClientId=1002&${VISITS_QUERY}`,
  'GET /visits/standard/changes': `/visits/standard/changes?SvcClientId=1002&${CHANGES_QUERY}`,
  'GET /visits/plus/changes': `/visits/plus/changes?SvcClientId=1002&${CHANGES_QUERY}`,
};

const INSTANCE = /^urn:svc:api:results:error:[0-9a-f-]{36}$/;

describe(`authentication matrix over every protected endpoint (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let other: IssuedCredential;
  let token: string;
  let operations: string[];
  /** The query parameters of each operation, as the contract publishes them. */
  let parameters: Record<string, string[]>;
  let imageId: string;
  let png: Buffer;

  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_SECONDS: '0' });
    await seedClients(t);
    partner = await issueCredential(t);
    other = await issueCredential(t, { clients: [1002] });
    token = await tokenFor(t.http, partner);
    png = await makeImage('png');
    await t.app.get(MenusRepository).saveMenus([
      { menu: Object.assign(new Menu(), { id: 101, clientId: 1001, name: 'M', startDate: '2026-01-01', endDate: null }), dishes: [] },
    ]);
    const upload = await request(t.http)
      .post('/menus/dishes?SvcClientId=1001')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Bearer ${token}`)
      .attach('', png, 'a.png')
      .field('json', JSON.stringify({ menuId: 101, code: 'A', description: 'A', type: 'Main' }));
    imageId = /images\/([0-9a-f-]{36})/.exec(upload.body.data.dish.image.url as string)![1]!;
    const contract = (await request(t.http).get('/docs/openapi.json')).body as {
      paths: Record<string, Record<string, { security?: Record<string, string[]>[]; parameters?: { name: string; in: string }[] }>>;
    };
    operations = Object.entries(contract.paths).flatMap(([path, ops]) =>
      Object.entries(ops)
        // The operations that need a token as well as the key (the token endpoint needs the key only).
        .filter(([, op]) => op.security?.some((s) => 'svc-api-key' in s && 'oauth2' in s))
        .map(([method]) => `${method.toUpperCase()} ${path}`),
    );
    parameters = Object.fromEntries(
      Object.entries(contract.paths).flatMap(([path, ops]) =>
        Object.entries(ops).map(([method, op]) => [
          `${method.toUpperCase()} ${path}`,
          (op.parameters ?? []).filter((p) => p.in === 'query').map((p) => p.name),
        ]),
      ),
    );

    // Client 1001 has two brands; a branch and a visit of each brand and type, and one of no brand.
    await t.app.get(ClientsService).addBrand(1001, 6, 'Acme Pizzeria');
    await t.app.get(BranchesRepository).upsertMany(
      [['B-1', 5], ['B-2', 6], ['B-3', null]].map(([id, brandId]) =>
        Object.assign(new Branch(), { id, clientId: 1001, name: `Branch ${id}`, branchCode: null, brandId }),
      ),
    );
    let visitId = 1;
    await importVisits(
      t,
      ['B-1', 'B-2', 'B-3'].flatMap((branchId) =>
        ['MV', 'OF', 'TA'].map((visitType) => ({
          visitId: visitId++,
          clientId: 1001,
          branchId,
          visitType,
          questionnaireType: 'Q',
          visitScore: 50,
          visitDateTime: '2024-01-15T12:00:00',
          sections: [],
        })),
      ),
    );
  });
  afterAll(async () => {
    await t.close();
  });

  const call = (operation: string, headers: Record<string, string>, path = SAMPLES[operation].path) => {
    const method = operation.split(' ')[0];
    const url = path.replace('IMAGE', imageId);
    const req = method === 'GET' ? request(t.http).get(url) : request(t.http).post(url);
    for (const [k, v] of Object.entries(headers)) void req.set(k, v);
    if (SAMPLES[operation].upload) {
      void req.attach('', png, 'a.png').field('json', JSON.stringify({ menuId: 101, code: 'B', description: 'B', type: 'Main' }));
    }
    return req;
  };

  function expectProblem(res: request.Response, status: number, detail: string, challenge?: string | RegExp): void {
    expect(res.status).toBe(status);
    expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(JSON.parse(res.text)).toEqual({
      title: status === 401 ? 'Unauthorized' : 'Forbidden',
      status,
      detail,
      instance: expect.stringMatching(INSTANCE),
    });
    if (challenge !== undefined) expect(res.headers['www-authenticate']).toMatch(challenge);
  }

  async function signed(overrides: { exp?: number; iss?: string; client?: string; key?: Parameters<SignJWT['sign']>[0]; kid?: string }) {
    const ring = await t.app.get(KeyringService).signingKey();
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({ client_id: overrides.client ?? partner.clientId, scope: 'svc-results-api' })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: overrides.kid ?? ring.kid })
      .setIssuer(overrides.iss ?? t.config.baseUrl)
      .setAudience('svc-results-api')
      .setSubject(overrides.client ?? partner.clientId)
      .setIssuedAt(now - 7200)
      .setExpirationTime(overrides.exp ?? now + 600)
      .setJti('test')
      .sign(overrides.key ?? ring.privateKey);
  }

  it('has a sample request for every protected operation of the contract', () => {
    expect(operations.length).toBeGreaterThan(0);
    expect(operations.filter((op) => !SAMPLES[op])).toEqual([]);
  });

  it('answers 200 with a valid key and token', async () => {
    for (const op of operations) {
      const res = await call(op, { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${token}` });
      expect([op, res.status, res.status === 200 ? '' : res.text]).toEqual([op, 200, '']);
    }
  });

  it('401: no key, unknown key', async () => {
    for (const op of operations) {
      expectProblem(await call(op, { Authorization: `Bearer ${token}` }), 401, 'The svc-api-key header is required.', /^ApiKey realm="svc-results-api"/);
      expectProblem(
        await call(op, { 'svc-api-key': 'svck_unknown', Authorization: `Bearer ${token}` }),
        401,
        'The svc-api-key is not valid.',
        /^ApiKey /,
      );
      // Two svc-api-key headers reach the service joined with a comma, which no key holds; even two of one live key.
      expectProblem(
        await call(op, { 'svc-api-key': `${partner.apiKey}, ${partner.apiKey}`, Authorization: `Bearer ${token}` }),
        401,
        'The request has more than one svc-api-key (two headers, or a list); it must have one.',
        /^ApiKey /,
      );
    }
  });

  it('401: a revoked key, while the credential other key still works', async () => {
    const second = await t.app.get(CredentialsService).addKey(partner.clientId);
    await t.app.get(CredentialsService).revokeKey(second.prefix);
    for (const op of operations) {
      expectProblem(await call(op, { 'svc-api-key': second.apiKey, Authorization: `Bearer ${token}` }), 401, 'The svc-api-key is not valid.');
    }
  });

  it('401 with a bare Bearer challenge: no token', async () => {
    for (const op of operations) {
      const res = await call(op, { 'svc-api-key': partner.apiKey });
      expectProblem(res, 401, 'An access token is required: send Authorization: Bearer <token>.', /^Bearer realm="svc-results-api"$/);
    }
  });

  it('401 invalid_token: malformed, expired, unknown key, alg none, wrong issuer', async () => {
    const stranger = await generateKeyPair('ES256');
    const unsigned = (await signed({})).split('.');
    const none = [Buffer.from(JSON.stringify({ alg: 'none', typ: 'at+jwt' })).toString('base64url'), unsigned[1], ''].join('.');
    const cases: [string, string][] = [
      ['not-a-jwt', 'The access token is malformed.'],
      [await signed({ exp: Math.floor(Date.now() / 1000) - 10 }), 'The access token has expired.'],
      [await signed({ key: stranger.privateKey, kid: 'stranger-key' }), 'The access token is signed by an unknown key.'],
      [none, 'The access token is not signed with ES256.'],
      [await signed({ iss: 'https://elsewhere.example' }), 'The access token is not valid.'],
      [`${unsigned[0]}.${unsigned[1]}.${'A'.repeat(86)}`, 'The access token is not valid.'],
    ];
    for (const op of operations) {
      for (const [bad, detail] of cases) {
        const res = await call(op, { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${bad}` });
        expectProblem(res, 401, detail, `Bearer realm="svc-results-api", error="invalid_token", error_description="${detail}"`);
      }
    }
  });

  it('401 invalid_token: a well-signed token with a lifetime the token endpoint never gives (none, ten years), or issued ahead of the clock', async () => {
    const ring = await t.app.get(KeyringService).signingKey();
    const now = Math.floor(Date.now() / 1000);
    const token = (times: { iat?: number; exp?: number }) => {
      const jwt = new SignJWT({ client_id: partner.clientId, scope: 'svc-results-api branches/standard.read' })
        .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: ring.kid })
        .setIssuer(t.config.baseUrl)
        .setAudience('svc-results-api')
        .setSubject(partner.clientId);
      if (times.iat !== undefined) jwt.setIssuedAt(times.iat);
      if (times.exp !== undefined) jwt.setExpirationTime(times.exp);
      return jwt.sign(ring.privateKey);
    };
    const detail = 'The access token has no lifetime the token endpoint gives.';
    for (const times of [{ iat: now }, { exp: now + 600 }, { iat: now, exp: now + 10 * 365 * 86_400 }]) {
      const res = await call('GET /branches', { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${await token(times)}` });
      expectProblem(res, 401, detail, `Bearer realm="svc-results-api", error="invalid_token", error_description="${detail}"`);
    }
    // Issued ahead of this server's clock by more than servers' clocks may differ (another replica's clock ahead): said so.
    const ahead = await call('GET /branches', { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${await token({ iat: now + 90, exp: now + 3690 })}` });
    const aheadDetail = /^The access token was issued \d+ s ahead of this server's clock, more than the 60 s that servers' clocks may differ by\.$/;
    expect(ahead.status).toBe(401);
    expect((JSON.parse(ahead.text) as { detail: string }).detail).toMatch(aheadDetail);
    // Within them, taken.
    const within = await call('GET /branches', { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${await token({ iat: now + 50, exp: now + 3650 })}` });
    expect(within.status).toBe(200);
    // The endpoint's own lifetime, issued a little while ago, is taken.
    const ok = await call('GET /branches', { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${await token({ iat: now - 60, exp: now + 3540 })}` });
    expect(ok.status).toBe(200);
  });

  it("401: another credential's token with this key", async () => {
    const otherToken = await tokenFor(t.http, other);
    for (const op of operations) {
      const res = await call(op, { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${otherToken}` });
      expectProblem(res, 401, 'The access token was issued to another client than the svc-api-key belongs to.', /error="invalid_token"/);
    }
  });

  it('403 insufficient_scope: a token without the endpoint scope', async () => {
    const narrow = await tokenFor(t.http, partner, 'svc-results-api');
    for (const op of operations) {
      const res = await call(op, { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${narrow}` });
      const scope = SAMPLES[op].scope;
      expectProblem(
        res,
        403,
        `The access token lacks the scope '${scope}' this endpoint needs.`,
        `Bearer realm="svc-results-api", error="insufficient_scope", scope="${scope}"`,
      );
    }
  });

  it('403: a SvcClientId the credential does not serve', async () => {
    for (const op of operations) {
      const res = await call(op, { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${token}` }, FOREIGN[op]);
      expectProblem(res, 403, 'The credential is not entitled to SvcClientId 1002.');
    }
  });

  it('a credential restricted to brands and visit types reads only those, on every operation', async () => {
    const restricted = await issueCredential(t, { brands: [5], visitTypes: ['MV'] });
    const auth = { 'svc-api-key': restricted.apiKey, Authorization: `Bearer ${await tokenFor(t.http, restricted)}` };
    const checked: string[] = [];
    for (const op of operations) {
      const res = await call(op, auth);
      expect([op, res.status]).toEqual([op, 200]);
      const body = res.body as { data?: { visits?: { visitId: number; brandName: string; visitType: string }[] } } | { id: string }[];
      if (Array.isArray(body)) {
        // Branches: only those of the entitled brands (a branch without a brand is of none).
        expect([op, body.map((b) => b.id)]).toEqual([op, ['B-1']]);
        checked.push(op);
      } else if (body.data?.visits) {
        // The visit of branch B-1 (brand 5) of type MV, and nothing else: no filter in the query widens it.
        expect([op, body.data.visits.map((v) => [v.visitId, v.brandName, v.visitType])]).toEqual([op, [[1, 'Acme Grill', 'MV']]]);
        checked.push(op);
      }
    }
    expect(checked.sort()).toEqual(['GET /branches', 'GET /visits/plus', 'GET /visits/plus/changes', 'GET /visits/standard', 'GET /visits/standard/changes']);
    // The same requests of an unrestricted credential see every brand and type.
    const all = await call('GET /visits/standard', { 'svc-api-key': partner.apiKey, Authorization: `Bearer ${token}` });
    expect((all.body.data.visits as unknown[]).length).toBe(9);
  });

  it('403: a SvcBrandId or VisitTypes outside the entitlement, on every operation that takes them', async () => {
    const restricted = await issueCredential(t, { brands: [5], visitTypes: ['MV'] });
    const auth = { 'svc-api-key': restricted.apiKey, Authorization: `Bearer ${await tokenFor(t.http, restricted)}` };
    const filtered = operations.filter((op) => parameters[op].some((p) => p === 'SvcBrandId' || p === 'VisitTypes'));
    expect(filtered.sort()).toEqual(['GET /visits/plus', 'GET /visits/plus/changes', 'GET /visits/standard', 'GET /visits/standard/changes']);
    for (const op of filtered) {
      const path = SAMPLES[op].path;
      expectProblem(await call(op, auth, `${path}&SvcBrandId=6`), 403, 'The credential is not entitled to SvcBrandId 6.');
      expectProblem(await call(op, auth, `${path}&visittypes=mv,of`), 403, 'The credential is not entitled to the visit type(s) OF.');
      expect((await call(op, auth, `${path}&SvcBrandId=5&VisitTypes=MV`)).status).toBe(200);
    }
  });

  it('401: a credential disabled after its token was issued', async () => {
    const soon = await issueCredential(t);
    const soonToken = await tokenFor(t.http, soon);
    expect((await call(operations[0], { 'svc-api-key': soon.apiKey, Authorization: `Bearer ${soonToken}` })).status).toBe(200);
    await t.app.get(CredentialsService).disable(soon.clientId);
    for (const op of operations) {
      const res = await call(op, { 'svc-api-key': soon.apiKey, Authorization: `Bearer ${soonToken}` });
      expectProblem(res, 401, 'The client of this access token is disabled.', /error="invalid_token"/);
    }
  });

  it('403: a scope taken from the credential after its token was issued, once the credentials are read again', async () => {
    const narrowed = await issueCredential(t);
    const narrowedToken = await tokenFor(t.http, narrowed);
    const auth = { 'svc-api-key': narrowed.apiKey, Authorization: `Bearer ${narrowedToken}` };
    expect((await call('GET /visits/plus', auth)).status).toBe(200);
    const credentials = t.app.get(DataSource).getRepository(Credential);
    const { scopes } = await credentials.findOneByOrFail({ clientId: narrowed.clientId });
    await credentials.update({ clientId: narrowed.clientId }, { scopes: scopes.split(' ').filter((s) => s !== 'visits/plus.read').join(' ') });
    t.app.get(AuthCacheService).forgetCredential(narrowed.clientId);
    expectProblem(
      await call('GET /visits/plus', auth),
      403,
      "The access token lacks the scope 'visits/plus.read' this endpoint needs.",
      'Bearer realm="svc-results-api", error="insufficient_scope", scope="visits/plus.read"',
    );
    expect((await call('GET /visits/standard', auth)).status).toBe(200);
  });

  it('stores no secret or key in clear', async () => {
    const rows = JSON.stringify([
      await t.app.get(AuthRepository).listCredentials(),
      await t.app.get(AuthRepository).listKeys(),
    ]);
    expect(rows).not.toContain(partner.clientSecret);
    expect(rows).not.toContain(partner.apiKey);
  });
});

describe(`revocation through the lookup cache (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_SECONDS: '1' });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const branches = (apiKey: string, token: string) =>
    request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', apiKey).set('Authorization', `Bearer ${token}`);

  it('stops a revoked key and a disabled credential once the cache time has passed', async () => {
    const c = await issueCredential(t);
    const token = await tokenFor(t.http, c);
    const get = () => branches(c.apiKey, token);
    expect((await get()).status).toBe(200);
    await t.app.get(CredentialsService).revokeKey(c.apiKey.slice(0, 12));
    await new Promise((r) => setTimeout(r, 1100));
    const res = await get();
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).detail).toBe('The svc-api-key is not valid.');
  });

  it('still checks the API key and the credential on every request', async () => {
    const a = await issueCredential(t);
    const b = await issueCredential(t);
    const token = await tokenFor(t.http, a);
    expect((await branches(a.apiKey, token)).status).toBe(200);
    // Remembered now: another credential's key with it is refused all the same.
    const crossed = await branches(b.apiKey, token);
    expect(crossed.status).toBe(401);
    expect(JSON.parse(crossed.text).detail).toBe('The access token was issued to another client than the svc-api-key belongs to.');
    expect(crossed.headers['www-authenticate']).toMatch(/^Bearer realm="svc-results-api", error="invalid_token"/);
    await t.app.get(CredentialsService).disable(a.clientId);
    await new Promise((r) => setTimeout(r, 1100));
    const disabled = await branches(a.apiKey, token);
    expect(disabled.status).toBe(401);
    expect(JSON.parse(disabled.text).detail).toBe('The client of this access token is disabled.');
  });

  it('stops accepting a token signed by a retired key once the cache time has passed', async () => {
    const c = await issueCredential(t);
    const keyring = t.app.get(KeyringService);
    const token = await tokenFor(t.http, c);
    expect((await branches(c.apiKey, token)).status).toBe(200);
    const kid = (JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()) as { kid: string }).kid;
    await keyring.rotate({ now: true });
    await keyring.retire(kid, { force: true });
    await new Promise((r) => setTimeout(r, 1100));
    const res = await branches(c.apiKey, token);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).detail).toBe('The access token is signed by an unknown key.');
  });
});
