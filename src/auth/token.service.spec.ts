import { createLocalJWKSet, jwtVerify } from 'jose';
import { authFixture, type AuthFixture, type StoredCredential } from '../../test/helpers/auth-fixture.js';
import { Credential } from './entities/credential.entity.js';
import { OAuthException } from '../common/oauth-error.js';
import { Scope } from './scopes.js';
import { scryptSecretHash } from './secrets.js';
import { TokenFailuresService } from './token-failures.service.js';
import { RedisGate } from '../redis/redis-gate.js';
import { TOKEN_AUDIENCE, TokenService, type TokenRequest } from './token.service.js';

const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

/** The OAuth error a refused request ends in: code, status, description and headers. */
async function refusal(issuing: Promise<unknown>): Promise<{ error: string; status: number; description: string; headers: Record<string, string> }> {
  const error = await issuing.then(
    () => undefined,
    (e: unknown) => e,
  );
  if (!(error instanceof OAuthException)) throw new Error(`expected an OAuthException, got ${String(error)}`);
  return { error: error.error, status: error.getStatus(), description: error.description, headers: error.headers };
}

describe('TokenService on a real keyring and credential store', () => {
  let f: AuthFixture;
  let tokens: TokenService;
  let partner: StoredCredential;
  let other: StoredCredential;

  beforeAll(async () => {
    f = await authFixture({ TOKEN_FAILURES_MAX: '3', PUBLIC_BASE_URL: 'https://results.example.test' });
    tokens = new TokenService(f.cache, f.repo, f.keyring, new TokenFailuresService(f.config, new RedisGate(null, 5000), f.metrics), f.config, f.metrics);
    partner = await f.addCredential({ scopes: [Scope.VisitsStandard, Scope.Branches] });
    other = await f.addCredential();
  });
  afterAll(async () => {
    await f.close();
  });

  /** A client_secret_post request; `apiKey` null sends none. */
  const post = (c: StoredCredential, form: Record<string, unknown> = {}, apiKey: string | null = c.apiKey): TokenRequest => ({
    apiKey: apiKey ?? undefined,
    authorization: undefined,
    form: { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret, ...form },
  });

  it('issues an ES256 at+jwt the keyring verifies, with this issuer, audience, client and every assigned scope', async () => {
    const issued = await tokens.issue(post(partner));
    expect(issued).toEqual({
      access_token: expect.any(String),
      expires_in: 3600,
      token_type: 'Bearer',
      scope: 'svc-results-api visits/standard.read branches/standard.read',
    });
    const { payload, protectedHeader } = await jwtVerify(issued.access_token, createLocalJWKSet(await f.keyring.jwks()), {
      issuer: 'https://results.example.test',
      audience: TOKEN_AUDIENCE,
      typ: 'at+jwt',
      algorithms: ['ES256'],
    });
    expect(protectedHeader.kid).toBe((await f.keyring.signingKey()).kid);
    expect(payload).toMatchObject({ client_id: partner.clientId, sub: partner.clientId, scope: issued.scope });
    expect(payload.exp! - payload.iat!).toBe(3600);
  });

  it('accepts client_secret_basic, and a body client_id only when it names the same client', async () => {
    const request = (bodyId?: string): TokenRequest => ({
      apiKey: partner.apiKey,
      authorization: basic(partner.clientId, partner.clientSecret),
      form: { grant_type: 'client_credentials', ...(bodyId ? { client_id: bodyId } : {}) },
    });
    expect((await tokens.issue(request())).token_type).toBe('Bearer');
    expect((await tokens.issue(request(partner.clientId))).token_type).toBe('Bearer');
    expect(await refusal(tokens.issue(request(other.clientId)))).toEqual({
      error: 'invalid_request',
      status: 400,
      description: "The body's client_id differs from the Basic credentials.",
      headers: {},
    });
  });

  it('grants a requested subset of the assigned scopes and refuses the rest as invalid_scope', async () => {
    expect((await tokens.issue(post(partner, { scope: `${Scope.Api} ${Scope.Branches}` }))).scope).toBe('svc-results-api branches/standard.read');
    expect(await refusal(tokens.issue(post(partner, { scope: Scope.Branches })))).toMatchObject({
      error: 'invalid_scope',
      description: "A requested scope must include 'svc-results-api'.",
    });
    expect(await refusal(tokens.issue(post(partner, { scope: `${Scope.Api} ${Scope.VisitsPlus}` })))).toMatchObject({
      error: 'invalid_scope',
      description: 'Scope not assigned to this client: visits/plus.read.',
    });
    expect(await refusal(tokens.issue(post(partner, { scope: `${Scope.Api}\t${Scope.Branches}` })))).toMatchObject({
      error: 'invalid_scope',
      description: 'The scope holds U+0009, which no scope has: scopes are separated by spaces only.',
    });
    expect(await refusal(tokens.issue(post(partner, { scope: `${Scope.Api},${Scope.Branches}` })))).toMatchObject({
      error: 'invalid_scope',
      description: 'The scope holds a comma, which no scope has: scopes are separated by spaces.',
    });
    expect((await tokens.issue(post(partner, { scope: `  ${Scope.Api}  ${Scope.Branches} ` }))).scope).toBe('svc-results-api branches/standard.read');
    expect(await refusal(tokens.issue(post(partner, { scope: `${Scope.Api} admin` })))).toMatchObject({
      error: 'invalid_scope',
      description: 'Unknown scope: admin.',
    });
  });

  it('refuses form values given twice or too long, and any grant but client_credentials', async () => {
    expect(await refusal(tokens.issue(post(partner, { scope: [Scope.Api, Scope.Api] })))).toMatchObject({
      error: 'invalid_request',
      description: "The parameter 'scope' must be given once, as text.",
    });
    expect(await refusal(tokens.issue(post(partner, { scope: [Scope.Api, '', Scope.Branches] })))).toMatchObject({
      error: 'invalid_request',
      description: "The parameter 'scope' must be given once, as text.",
    });
    expect(await refusal(tokens.issue(post(partner, { client_secret: 'x'.repeat(201) })))).toMatchObject({
      error: 'invalid_request',
      description: "The parameter 'client_secret' must be at most 200 characters.",
    });
    expect(await refusal(tokens.issue(post(partner, { grant_type: 'password' })))).toMatchObject({
      error: 'unsupported_grant_type',
      status: 400,
    });
  });

  it('holds Basic credentials to the lengths the form is held to, a malformed request that is no guess of the secret', async () => {
    const target = await f.addCredential();
    const viaBasic = (id: string, secret: string) => tokens.issue({ apiKey: target.apiKey, authorization: basic(id, secret), form: { grant_type: 'client_credentials' } });
    expect(await refusal(viaBasic(target.clientId, 'x'.repeat(201)))).toMatchObject({
      error: 'invalid_request',
      status: 400,
      description: "The Basic credentials' client_secret must be at most 200 characters.",
    });
    expect(await refusal(viaBasic('c'.repeat(101), 'x'))).toMatchObject({
      error: 'invalid_request',
      status: 400,
      description: "The Basic credentials' client_id must be at most 100 characters.",
    });
    // Not counted towards the lockout: the client's own secret still gets its token after more such requests than the lockout takes.
    for (let i = 0; i < 12; i++) await refusal(viaBasic(target.clientId, `${i}`.padEnd(300, 'x')));
    expect((await viaBasic(target.clientId, target.clientSecret)).token_type).toBe('Bearer');
  });

  it('checks the API key before the secret: a key of another client is refused whatever the secret', async () => {
    const target = await f.addCredential();
    const apiKeyRealm = { 'WWW-Authenticate': 'ApiKey realm="svc-results-api", header="svc-api-key"' };
    expect(await refusal(tokens.issue(post(target, { client_secret: 'wrong' }, other.apiKey)))).toEqual({
      error: 'invalid_client',
      status: 401,
      description: 'The svc-api-key does not belong to this client.',
      headers: apiKeyRealm,
    });
    expect(await refusal(tokens.issue(post(target, {}, null)))).toMatchObject({
      description: 'The svc-api-key header is required.',
      headers: apiKeyRealm,
    });
    expect(await refusal(tokens.issue(post(target, {}, 'svck_unknown')))).toMatchObject({ description: 'The svc-api-key is not valid.' });
  });

  it('locks a client id out after TOKEN_FAILURES_MAX failures, the right secret included, and counts each refusal', async () => {
    const victim = await f.addCredential();
    const failures = async (): Promise<number> => {
      const counted = (await f.metrics.tokenFailures.get()).values.filter((v) => v.labels.error === 'invalid_client');
      return counted.reduce((n, v) => n + v.value, 0);
    };
    const before = await failures();
    for (let i = 0; i < 3; i++) {
      expect(await refusal(tokens.issue(post(victim, { client_secret: `wrong-${i}` })))).toEqual({
        error: 'invalid_client',
        status: 401,
        description: 'Client authentication failed.',
        headers: {},
      });
    }
    expect(await failures()).toBe(before + 3);
    const locked = await refusal(tokens.issue(post(victim)));
    expect(locked).toMatchObject({ error: 'slow_down', status: 429 });
    expect(Number(locked.headers['Retry-After'])).toBeGreaterThan(0);
    // Another client id is not affected.
    expect((await tokens.issue(post(other))).token_type).toBe('Bearer');
  });

  it('answers a failed Basic authentication with the Basic challenge', async () => {
    const refused = await refusal(
      tokens.issue({ apiKey: other.apiKey, authorization: basic(other.clientId, 'wrong'), form: { grant_type: 'client_credentials' } }),
    );
    expect(refused).toEqual({
      error: 'invalid_client',
      status: 401,
      description: 'Client authentication failed.',
      headers: { 'WWW-Authenticate': 'Basic realm="svc-results-api", charset="UTF-8"' },
    });
  });

  it('refuses a disabled credential, and issues again once it is enabled', async () => {
    const paused = await f.addCredential({ disabled: true });
    expect(await refusal(tokens.issue(post(paused)))).toMatchObject({ error: 'invalid_client', description: 'Client authentication failed.' });
    await f.repo.setDisabled(paused.clientId, false);
    f.cache.forgetCredential(paused.clientId);
    expect((await tokens.issue(post(paused))).token_type).toBe('Bearer');
  });

  it('rewrites a scrypt secret hash in the HMAC form once the secret verified against it', async () => {
    const legacy = await f.addCredential();
    const credentials = f.db.getRepository(Credential);
    await credentials.update({ clientId: legacy.clientId }, { secretHash: await scryptSecretHash(legacy.clientSecret) });
    expect((await tokens.issue(post(legacy))).token_type).toBe('Bearer');
    expect((await credentials.findOneByOrFail({ clientId: legacy.clientId })).secretHash).toMatch(/^hmac-sha256\$[0-9a-f]{64}$/);
    // The rewritten hash verifies the same secret, read afresh.
    expect((await tokens.issue(post(legacy))).token_type).toBe('Bearer');
  });
});
