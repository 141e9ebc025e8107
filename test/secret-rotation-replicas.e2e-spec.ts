import request from 'supertest';
import { issueCredential, seedClients, tokenFor } from './helpers/auth.js';
import { cliJson } from './helpers/cli.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

/**
 * A client secret rotated by another process (the CLI, while replicas serve) is taken by a
 * replica at once, even one that read the credential just before: a secret that does not match
 * the credential as this replica last read it is checked once more against the stored row
 * before it is refused and counted as a failed guess. Before, the partner's new secret was
 * refused by every replica for up to AUTH_CACHE_SECONDS, and counted towards its lockout.
 */
describe(`a client secret rotated by another process (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    // The longest cache time: a replica holding the credential read before would refuse the new secret all that time.
    t = await startTestApp({ AUTH_CACHE_SECONDS: '30', TOKEN_FAILURES_MAX: '1' });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  const tokenRequest = (c: { clientId: string; apiKey: string }, secret: string) =>
    request(t.http)
      .post('/connect/token')
      .set('svc-api-key', c.apiKey)
      .type('form')
      .send({ grant_type: 'client_credentials', client_id: c.clientId, client_secret: secret });

  it('issues a token for the new secret at once, and counts no failure for it', async () => {
    const c = await issueCredential(t);
    // This replica has read the credential (and keeps it for AUTH_CACHE_SECONDS).
    await tokenFor(t.http, c);
    const rotated = await cliJson<{ clientSecret: string }>(['credentials', 'rotate-secret', c.clientId, '--keep-old-hours', '1'], t.env);

    const res = await tokenRequest(c, rotated.clientSecret);
    expect([res.status, res.body]).toEqual([200, expect.objectContaining({ token_type: 'Bearer' })]);
    // The old secret is kept for the hour asked.
    expect((await tokenRequest(c, c.clientSecret)).status).toBe(200);
    // One wrong secret locks the client out here (TOKEN_FAILURES_MAX=1): none was counted above.
    expect((await tokenRequest(c, rotated.clientSecret)).status).toBe(200);
    const wrong = await tokenRequest(c, 'not-the-secret');
    expect([wrong.status, wrong.body]).toEqual([401, { error: 'invalid_client', error_description: 'Client authentication failed.' }]);
    const locked = await tokenRequest(c, rotated.clientSecret);
    expect([locked.status, locked.body.error, locked.headers['cache-control']]).toEqual([429, 'slow_down', 'no-store']);
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
  });

  it('still refuses a wrong secret, and an old one given up by the rotation once the credential is read again', async () => {
    const c = await issueCredential(t);
    await tokenFor(t.http, c);
    const rotated = await cliJson<{ clientSecret: string }>(['credentials', 'rotate-secret', c.clientId], t.env);
    expect((await tokenRequest(c, rotated.clientSecret)).status).toBe(200);
    // The new secret had this replica read the credential again: the old secret, ended by the rotation, is refused.
    const old = await tokenRequest(c, c.clientSecret);
    expect([old.status, old.body]).toEqual([401, { error: 'invalid_client', error_description: 'Client authentication failed.' }]);
  });
});
