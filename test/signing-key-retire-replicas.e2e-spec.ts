import request from 'supertest';
import { KeyringService } from '../src/auth/keyring.service.js';
import { issueCredential, seedClients, tokenFor } from './helpers/auth.js';
import { cliJson } from './helpers/cli.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

const AUTH_CACHE_SECONDS = 6;
const sleepUntil = (at: number): Promise<void> => new Promise((r) => setTimeout(r, Math.max(0, at - Date.now())));
const kidOf = (token: string): string => (JSON.parse(Buffer.from(token.split('.')[0], 'base64url').toString()) as { kid: string }).kid;

/**
 * A signing key retired by another process (the CLI, another replica's operator) reaches this
 * replica within AUTH_CACHE_SECONDS: its ring is read again by then, and a token it verified
 * with the ring read before is not remembered past that time either. A token first verified
 * late in the ring's time was remembered for a whole AUTH_CACHE_SECONDS from then, so a
 * compromised key's tokens kept working for up to twice the documented time.
 */
describe(`a signing key retired by another process (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_SECONDS: String(AUTH_CACHE_SECONDS) });
    await seedClients(t);
  });
  afterAll(async () => {
    await t.close();
  });

  it('stops its tokens within AUTH_CACHE_SECONDS of the retirement, also one first verified late in that time', async () => {
    const c = await issueCredential(t);
    const branches = (token: string) =>
      request(t.http).get('/branches?SvcClientId=1001').set('svc-api-key', c.apiKey).set('Authorization', `Bearer ${token}`);
    // Signed by the first key, not yet presented.
    const token = await tokenFor(t.http, c);
    const old = kidOf(token);
    // This replica rotates and so reads its ring now; the old key is then retired elsewhere.
    await t.app.get(KeyringService).rotate({ now: true });
    const readAt = Date.now();
    expect(await cliJson(['signing-keys', 'retire', old, '--force'], t.env)).toEqual({ kid: old, retired: true });
    const retiredAt = Date.now();

    // Late in the time the ring read before may stand: accepted or not, as the ring says.
    await sleepUntil(readAt + (AUTH_CACHE_SECONDS - 2) * 1000);
    expect([200, 401]).toContain((await branches(token)).status);

    await sleepUntil(retiredAt + AUTH_CACHE_SECONDS * 1000 + 500);
    const res = await branches(token);
    expect(res.status).toBe(401);
    expect(JSON.parse(res.text).detail).toBe('The access token is signed by an unknown key.');
  });
});
