import { Reflector } from '@nestjs/core';
import { authFixture, type AuthFixture, type StoredCredential } from '../../../test/helpers/auth-fixture.js';
import { guardCall, refusalOf } from '../../../test/helpers/guard-context.js';
import { ProblemException } from '../../common/problem.js';
import { ApiKeyGuard } from './api-key.guard.js';

const API_KEY_CHALLENGE = 'ApiKey realm="svc-results-api", header="svc-api-key"';

describe('ApiKeyGuard on a real credential store', () => {
  let f: AuthFixture;
  let guard: ApiKeyGuard;
  let partner: StoredCredential;

  beforeAll(async () => {
    f = await authFixture();
    guard = new ApiKeyGuard(new Reflector(), f.cache);
    partner = await f.addCredential();
  });
  afterAll(async () => {
    await f.close();
  });

  async function refused(apiKey: string | undefined): Promise<{ status: number; detail: string; headers: Record<string, string> }> {
    const { context } = guardCall('branches', { headers: apiKey === undefined ? {} : { 'svc-api-key': apiKey } });
    const error = await refusalOf(() => guard.canActivate(context));
    if (!(error instanceof ProblemException)) throw error;
    return { status: error.getStatus(), detail: error.detail, headers: error.headers };
  }

  it('lets a @Public() route through without a key', async () => {
    const { context, request } = guardCall('open');
    expect(await guard.canActivate(context)).toBe(true);
    expect(request.apiKey).toBeUndefined();
  });

  it('keeps the credential of a valid key (spaces around it ignored) on the request', async () => {
    const { context, request } = guardCall('branches', { headers: { 'svc-api-key': ` ${partner.apiKey} ` } });
    expect(await guard.canActivate(context)).toBe(true);
    expect(request.apiKey).toEqual({ credentialId: partner.clientId, keyPrefix: partner.keyPrefix });
  });

  it('answers a missing or blank key with a 401 and the ApiKey challenge', async () => {
    const missing = { status: 401, detail: 'The svc-api-key header is required.', headers: { 'WWW-Authenticate': API_KEY_CHALLENGE } };
    expect(await refused(undefined)).toEqual(missing);
    expect(await refused('  ')).toEqual(missing);
  });

  it('answers an unknown or revoked key with a 401 and the ApiKey challenge', async () => {
    const invalid = { status: 401, detail: 'The svc-api-key is not valid.', headers: { 'WWW-Authenticate': API_KEY_CHALLENGE } };
    expect(await refused(`${partner.apiKey}x`)).toEqual(invalid);
    const revoked = await f.addCredential();
    await f.repo.revokeKey(revoked.keyPrefix);
    expect(await refused(revoked.apiKey)).toEqual(invalid);
  });
});
