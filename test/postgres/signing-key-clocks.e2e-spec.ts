import { cliJson, cli } from '../helpers/cli.js';
import { restoreSystemClock, withSystemClockOff } from '../helpers/system-clock.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';
import { KeyringService, PUBLISH_SECONDS } from '../../src/auth/keyring.service.js';

/**
 * `signing-keys rotate` and `retire` run from a host whose clock is off (an operator's laptop,
 * a Job on a node that drifted): the replicas judge the key's turn by the database's clock,
 * whatever the command's.
 */
describe('signing key commands from a host whose clock is off (postgres)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await startTestApp({ AUTH_CACHE_SECONDS: '0' });
    await t.app.get(KeyringService).signingKey();
  });
  afterAll(async () => {
    restoreSystemClock();
    await t.close();
  });

  it('publishes a key rotated from a host ten minutes behind for the whole lead before it signs', async () => {
    const before = (await t.app.get(KeyringService).signingKey()).kid;
    const asked = Date.now();
    const key = await withSystemClockOff(-10 * 60_000, () => cliJson<{ kid: string; signsFrom: string }>(['signing-keys', 'rotate'], t.env));
    expect(Date.parse(key.signsFrom)).toBeGreaterThanOrEqual(asked + PUBLISH_SECONDS * 1000);
    // The replica (this application, its clock right) still signs with the key before.
    expect((await t.app.get(KeyringService).signingKey()).kid).toBe(before);
  });

  it('refuses to retire, from a host ten minutes ahead, the key that signs until the one rotated in takes over', async () => {
    const signing = (await t.app.get(KeyringService).signingKey()).kid;
    // Rotated by a host whose clock is right: the new key signs in 7 minutes, and the one before until then.
    await cliJson(['signing-keys', 'rotate'], t.env);
    const retired = await withSystemClockOff(10 * 60_000, () => cli(['signing-keys', 'retire', signing], t.env));
    expect(retired.code).not.toBe(0);
    expect(retired.stderr).toContain('is the key that signs now');
    expect((await t.app.get(KeyringService).signingKey()).kid).toBe(signing);
  });

  it('lists a key rotated in, from a host ten minutes ahead, as published until it signs by the clock the replicas go by', async () => {
    const key = await cliJson<{ kid: string; signsFrom: string }>(['signing-keys', 'rotate'], t.env);
    const listed = await withSystemClockOff(10 * 60_000, () => cli(['signing-keys', 'list'], t.env));
    expect(listed.code).toBe(0);
    expect(listed.stdout.split('\n').find((line) => line.startsWith(key.kid))).toContain(`published, signs from ${key.signsFrom}`);
  });

  it('dates a retirement from a host ten minutes behind by the clock the keys were stamped with', async () => {
    const key = await cliJson<{ kid: string; signsFrom: string }>(['signing-keys', 'rotate'], t.env);
    const asked = Date.now();
    const retired = await withSystemClockOff(-10 * 60_000, () => cli(['signing-keys', 'retire', key.kid], t.env));
    expect(retired.code).toBe(0);
    const listed = await cliJson<{ kid: string; createdAt: string; retiredAt: string | null }[]>(['signing-keys', 'list'], t.env);
    const row = listed.find((k) => k.kid === key.kid)!;
    // Not ten minutes before the key was made.
    expect(Date.parse(row.retiredAt!)).toBeGreaterThanOrEqual(Date.parse(row.createdAt));
    expect(Date.parse(row.retiredAt!)).toBeGreaterThanOrEqual(asked - 60_000);
  });
});
