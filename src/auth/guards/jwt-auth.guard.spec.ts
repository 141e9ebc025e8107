import { Reflector } from '@nestjs/core';
import { SignJWT } from 'jose';
import { authFixture, type AuthFixture, type StoredCredential } from '../../../test/helpers/auth-fixture.js';
import { guardCall, refusalOf, type GuardCall } from '../../../test/helpers/guard-context.js';
import { ProblemException } from '../../common/problem.js';
import { KeyringService } from '../keyring.service.js';
import { Scope } from '../scopes.js';
import { TokenFailuresService } from '../token-failures.service.js';
import { RedisGate } from '../../redis/redis-gate.js';
import { TOKEN_AUDIENCE, TokenService } from '../token.service.js';
import { VerifiedTokens } from '../verified-tokens.js';
import { ApiKeyGuard } from './api-key.guard.js';
import { JwtAuthGuard } from './jwt-auth.guard.js';
import { JwtStrategy } from './jwt.strategy.js';

const challenge = (description: string): string =>
  `Bearer realm="svc-results-api", error="invalid_token", error_description="${description}"`;

describe('JwtAuthGuard with passport-jwt on a real keyring and credential store', () => {
  let f: AuthFixture;
  let tokens: TokenService;
  let apiKeys: ApiKeyGuard;
  let partner: StoredCredential;
  let other: StoredCredential;

  beforeAll(async () => {
    f = await authFixture({ PUBLIC_BASE_URL: 'https://results.example.test' });
    tokens = new TokenService(f.cache, f.repo, f.keyring, new TokenFailuresService(f.config, new RedisGate(null, 5000), f.metrics), f.config, f.metrics);
    apiKeys = new ApiKeyGuard(new Reflector(), f.cache);
    partner = await f.addCredential({ scopes: [Scope.Branches], brands: [5] });
    other = await f.addCredential();
  });
  afterAll(async () => {
    await f.close();
  });

  /** The guard as the application builds it; the strategy it verifies with is the one passport now has. */
  function bearerGuard(keyring: KeyringService = f.keyring): { guard: JwtAuthGuard; verified: VerifiedTokens } {
    const verified = new VerifiedTokens(f.config);
    const strategy = new JwtStrategy(f.cache, verified, keyring, f.config);
    return { guard: new JwtAuthGuard(new Reflector(), verified, strategy), verified };
  }

  const tokenOf = async (c: StoredCredential): Promise<string> => {
    const form = { grant_type: 'client_credentials', client_id: c.clientId, client_secret: c.clientSecret };
    return (await tokens.issue({ apiKey: c.apiKey, authorization: undefined, form })).access_token;
  };
  const header = (json: string): string => Buffer.from(json).toString('base64url');

  /** A request through the API key guard (which runs first), carrying `authorization`. */
  async function call(c: StoredCredential, authorization?: string): Promise<GuardCall> {
    const headers: Record<string, string> = { 'svc-api-key': c.apiKey, ...(authorization === undefined ? {} : { authorization }) };
    const http = guardCall('branches', { headers });
    await apiKeys.canActivate(http.context);
    return http;
  }

  /** Status, detail and headers of the 401 a token is refused with. */
  async function refused(guard: JwtAuthGuard, http: GuardCall): Promise<{ status: number; detail: string; headers: Record<string, string> }> {
    const error = await refusalOf(() => guard.canActivate(http.context));
    if (!(error instanceof ProblemException)) throw error;
    return { status: error.getStatus(), detail: error.detail, headers: error.headers };
  }

  /** A token signed by the keyring's current key with the given claims: for tokens the service would not issue. */
  async function signed(claims: Record<string, unknown>, header: Record<string, unknown> = {}, understood: Record<string, boolean> = {}): Promise<string> {
    const key = await f.keyring.signingKey();
    const now = Math.floor(Date.now() / 1000);
    return new SignJWT({
      iss: 'https://results.example.test',
      aud: TOKEN_AUDIENCE,
      iat: now,
      exp: now + 600,
      client_id: partner.clientId,
      scope: `${Scope.Api} ${Scope.Branches}`,
      ...claims,
    })
      .setProtectedHeader({ alg: 'ES256', typ: 'at+jwt', kid: key.kid, ...header })
      .sign(key.privateKey, { crit: understood });
  }

  it('lets a @Public() route through without a token', async () => {
    const { guard } = bearerGuard();
    expect(await guard.canActivate(guardCall('open').context)).toBe(true);
  });

  it("puts the caller on the request: the credential's scopes and entitlements, its client id in the log fields", async () => {
    const { guard, verified } = bearerGuard();
    const token = await tokenOf(partner);
    const http = await call(partner, `Bearer ${token}`);
    expect(await guard.canActivate(http.context)).toBe(true);
    expect(http.request.principal).toEqual({
      clientId: partner.clientId,
      keyPrefix: partner.keyPrefix,
      scopes: new Set([Scope.Api, Scope.Branches]),
      clients: new Set([1001]),
      brands: new Set([5]),
      visitTypes: null,
      selectableBrands: new Set([5]),
      // No restriction of visit types: every type the table knows may be named.
      selectableVisitTypes: new Set(['MV', 'OF', 'TA']),
    });
    expect(http.response.locals.clientId).toBe(partner.clientId);
    expect(verified.claimsOf(token)).toMatchObject({ client_id: partner.clientId });
  });

  it('asks for a token with a bare challenge when the request carries none', async () => {
    const { guard } = bearerGuard();
    for (const authorization of [undefined, 'Bearer', 'Bearer   ']) {
      expect(await refused(guard, await call(partner, authorization))).toEqual({
        status: 401,
        detail: 'An access token is required: send Authorization: Bearer <token>.',
        headers: { 'WWW-Authenticate': 'Bearer realm="svc-results-api"' },
      });
    }
  });

  it.each([
    ['not three parts', () => Promise.resolve('abc'), 'The access token is malformed.'],
    ['an extra word after it', async () => `${await tokenOf(partner)} junk`, 'The access token is malformed.'],
    ['a signature of the wrong length', async () => (await tokenOf(partner)).slice(0, -4), 'The access token is malformed.'],
    ['a header that is not JSON', () => Promise.resolve(`${header('{alg')}.e30.c2ln`), 'The access token is malformed.'],
    ['another algorithm', () => Promise.resolve(`${header('{"alg":"HS256","typ":"at+jwt","kid":"k"}')}.e30.c2ln`), 'The access token is not signed with ES256.'],
    ['another type', async () => signed({}, { typ: 'JWT' }), 'The access token is not an at+jwt access token.'],
    ['an unknown key', async () => signed({}, { kid: 'unknown' }), 'The access token is signed by an unknown key.'],
    ['a critical header extension', async () => signed({}, { crit: ['foo'], foo: 1 }, { foo: true }), 'The access token names header parameters this service does not understand (crit).'],
    ['an unencoded payload declared critical', async () => signed({}, { crit: ['b64'], b64: true }), 'The access token names header parameters this service does not understand (crit).'],
    ['an expiry passed', async () => signed({ exp: Math.floor(Date.now() / 1000) - 5 }), 'The access token has expired.'],
    ['another issuer', async () => signed({ iss: 'https://elsewhere.example.test' }), 'The access token is not valid.'],
    ['another audience', async () => signed({ aud: 'another-api' }), 'The access token is not valid.'],
    ['a changed payload', async () => (await tokenOf(partner)).replace(/\.[^.]+\./, `.${header('{"client_id":"x"}')}.`), 'The access token is not valid.'],
  ])('refuses a token with %s as invalid_token', async (_case, token, detail) => {
    const { guard } = bearerGuard();
    expect(await refused(guard, await call(partner, `Bearer ${await token()}`))).toEqual({
      status: 401,
      detail,
      headers: { 'WWW-Authenticate': challenge(detail) },
    });
  });

  it("refuses a valid token sent with another client's API key, or once its credential is disabled", async () => {
    const { guard } = bearerGuard();
    const token = await tokenOf(partner);
    const mismatch = 'The access token was issued to another client than the svc-api-key belongs to.';
    expect(await refused(guard, await call(other, `Bearer ${token}`))).toEqual({
      status: 401,
      detail: mismatch,
      headers: { 'WWW-Authenticate': challenge(mismatch) },
    });

    const paused = await f.addCredential();
    const pausedToken = await tokenOf(paused);
    await f.repo.setDisabled(paused.clientId, true);
    f.cache.forgetCredential(paused.clientId);
    const disabled = 'The client of this access token is disabled.';
    expect(await refused(guard, await call(paused, `Bearer ${pausedToken}`))).toEqual({
      status: 401,
      detail: disabled,
      headers: { 'WWW-Authenticate': challenge(disabled) },
    });
  });

  it('trusts a verified token without its signature until the cache time ends, but checks its API key and credential on every request', async () => {
    const { guard, verified } = bearerGuard();
    const remembered = await tokenOf(partner);
    const unseen = await tokenOf(partner);
    expect(await guard.canActivate((await call(partner, `Bearer ${remembered}`)).context)).toBe(true);
    // The key both were signed with stops verifying: only the token verified before is still accepted.
    const retired = (await f.keyring.signingKey()).kid;
    await f.keyring.rotate({ now: true });
    await f.keyring.retire(retired, { force: true });
    expect(await guard.canActivate((await call(partner, `Bearer ${remembered}`)).context)).toBe(true);
    expect((await refused(guard, await call(partner, `Bearer ${unseen}`))).detail).toBe('The access token is signed by an unknown key.');
    expect(verified.claimsOf(unseen)).toBeUndefined();
    expect((await refused(guard, await call(other, `Bearer ${remembered}`))).detail).toBe(
      'The access token was issued to another client than the svc-api-key belongs to.',
    );
  });

  it('lets a failure to read the signing keys (their database away) through as a fault of the service, not a 401', async () => {
    const away = await authFixture();
    const keyring = new KeyringService(away.repo, away.config);
    await away.close();
    const expected = await refusalOf(() => away.repo.activeSigningKeys());
    const { guard } = bearerGuard(keyring);
    const error = await refusalOf(async () => guard.canActivate((await call(partner, `Bearer ${await signed({})}`)).context));
    expect(error).not.toBeInstanceOf(ProblemException);
    expect(error).toBeInstanceOf(Error);
    expect((error as Error).message).toBe((expected as Error).message);
  });
});
