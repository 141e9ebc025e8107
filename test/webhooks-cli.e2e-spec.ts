import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { verifyWebhook } from '../examples/verify-webhook.js';
import { dataSourceOptions } from '../src/database/data-source-options.js';
import type { EndpointSummary } from '../src/webhooks/webhooks.service.js';
import { cli, cliJson, spawnCli } from './helpers/cli.js';
import { webhookViolations } from './helpers/contract.js';
import { isolatedConfig } from './helpers/test-config.js';
import { WebhookReceiver } from './helpers/webhook-receiver.js';
import { QUICK_WEBHOOKS, visitRecord } from './helpers/webhooks-fixture.js';

const files = mkdtempSync(join(tmpdir(), 'webhooks-cli-'));
function file(name: string, rows: unknown[], ndjson = false): string {
  const path = join(files, name);
  writeFileSync(path, ndjson ? rows.map((r) => JSON.stringify(r)).join('\n') : JSON.stringify(rows));
  return path;
}

interface Added {
  id: string;
  url: string;
  credential: string;
  secret: string;
}

describe(`webhooks operator commands (${process.env.TEST_DATABASE})`, () => {
  const { config, env, drop } = isolatedConfig(QUICK_WEBHOOKS);
  const receiver = new WebhookReceiver();
  let db: DataSource;
  let credential: string;

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], env);
    await cliJson(['brands', 'add', '--client', '1001', '--id', '5', '--name', 'Acme Grill'], env);
    await cliJson(['branches', 'import', '--client', '1001', file('branches.json', [{ id: 'B-1', name: 'Leeds', branchCode: null, brandId: 5 }])], env);
    credential = (await cliJson<{ clientId: string }>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'], env)).clientId;
    db = await new DataSource(dataSourceOptions(config)).initialize();
    await receiver.start();
  });
  afterAll(async () => {
    await receiver.stop();
    await db.destroy();
    await drop();
  });
  beforeEach(() => {
    receiver.received.length = 0;
    receiver.answer = () => ({ status: 200 });
  });

  const list = () => cliJson<EndpointSummary[]>(['webhooks', 'list'], env);
  const add = (path: string) => cliJson<Added>(['webhooks', 'add', credential, '--url', `${receiver.url}${path}`], env);

  it('has help for the group and every command', async () => {
    expect((await cli(['--help'], env)).stdout).toMatch(/^ {2}webhooks /m);
    for (const command of ['add', 'list', 'set-url', 'disable', 'enable', 'remove', 'rotate-secret', 'test']) {
      const result = await cli(['webhooks', command, '--help'], env);
      expect({ command, code: result.code, stderr: result.stderr }).toEqual({ command, code: 0, stderr: '' });
      expect(result.stdout).toMatch(new RegExp(`^Usage: results-cli webhooks ${command}`));
    }
  });

  it('adds an endpoint and prints its signing secret once: stored encrypted, never listed', async () => {
    const text = await cli(['webhooks', 'add', credential, '--url', `${receiver.url}/hook`], env);
    expect(text.code).toBe(0);
    expect(text.stderr).toBe('');
    const [, id, secret] = /^(wh_[0-9a-f]{16}) {2}http:\/\/127\.0\.0\.1:\d+\/hook {2}\(credential svc_[0-9a-f]+\)\nsigning secret, shown only now: (whsec_[\w-]{43})\n$/.exec(text.stdout) ?? [];
    expect(id).toBeDefined();

    const json = await add('/hook-2');
    expect(json).toEqual({ id: expect.stringMatching(/^wh_[0-9a-f]{16}$/), url: `${receiver.url}/hook-2`, credential, secret: expect.stringMatching(/^whsec_/) });

    const stored = await db.query<{ secret: string }[]>('SELECT secret FROM webhook_endpoints');
    const everything = JSON.stringify(stored) + (await cli(['webhooks', 'list'], env)).stdout + JSON.stringify(await list());
    for (const shown of [secret, json.secret]) expect(everything).not.toContain(shown.slice('whsec_'.length));
    expect(stored.every((row) => row.secret.startsWith('v1.'))).toBe(true);
    for (const endpoint of await list()) await cliJson(['webhooks', 'remove', endpoint.id], env);
  });

  it('refuses bad input with a clear message and a non-zero exit', async () => {
    const refused = async (args: string[], message: RegExp, environment = env): Promise<void> => {
      const result = await cli(['webhooks', ...args], environment);
      expect({ args, code: result.code, stdout: result.stdout }).toEqual({ args, code: 1, stdout: '' });
      expect(result.stderr).toMatch(message);
    };
    await refused(['add', 'svc_nobody', '--url', `${receiver.url}/x`], /^error: credential 'svc_nobody' does not exist\n$/);
    await refused(['add', credential], /^error: required option '--url <url>' not specified/);
    await refused(['add', credential, '--url', 'hook'], /^error: --url: 'hook' is not an absolute URL\n$/);
    await refused(['add', credential, '--url', 'http://93.184.215.14/hook'], /^error: --url: the URL is refused: http is allowed only to a loopback address/);
    await refused(['add', credential, '--url', 'https://10.1.2.3/hook'], /^error: --url: the URL is refused: 10\.1\.2\.3 is a private, link-local or reserved address \(add the endpoint with --allow-private to allow it\)\n$/);
    await refused(['add', credential, '--url', 'https://169.254.169.254/latest'], /link-local/);
    await refused(['add', credential, '--url', `${receiver.url}/x`], /^error: --url: the URL must be https \(http is allowed only to a loopback address with WEBHOOKS_ALLOW_HTTP_LOOPBACK=true\)/, {
      ...env,
      WEBHOOKS_ALLOW_HTTP_LOOPBACK: 'false',
    });
    for (const verb of ['disable', 'enable', 'remove', 'rotate-secret', 'test']) await refused([verb, 'wh_nope'], /^error: webhook endpoint 'wh_nope' does not exist\n$/);
    // A signing secret pasted for the id is not echoed.
    await refused(['remove', 'whsec_Pasted0123456789'], /^error: webhook endpoint '\[redacted\]' does not exist\n$/);
    expect(await list()).toEqual([]);
    // The same URL twice for one credential: its receiver would get every event twice.
    const { id } = await add('/once');
    await refused(['add', credential, '--url', `${receiver.url}/once`], new RegExp(`^error: --url: credential ${credential} has an endpoint at ${receiver.url}/once already \\(${id}\\)\\n$`));
    await cliJson(['webhooks', 'remove', id], env);
    expect(await list()).toEqual([]);

    const allowed = await cliJson<Added>(['webhooks', 'add', credential, '--url', 'https://10.1.2.3/hook', '--allow-private'], env);
    expect((await list()).map((e) => [e.id, e.allowPrivate])).toEqual([[allowed.id, true]]);
    await cliJson(['webhooks', 'remove', allowed.id], env);
  });

  it('sends a signed ping with `test` and reports the answer', async () => {
    const { id, secret } = await add('/ping');
    const ok = await cli(['webhooks', 'test', id], env);
    expect(ok).toEqual({ code: 0, stdout: expect.stringMatching(new RegExp(`^ping evt_[0-9a-f]{32} to ${id} delivered: HTTP 200\\n$`)), stderr: '' });
    expect(receiver.received).toHaveLength(1);
    const [ping] = receiver.received;
    expect(ping.json).toEqual({ id: expect.stringMatching(/^evt_/), type: 'ping', created: expect.any(String), data: {} });
    expect(ping.headers['svc-event-id']).toBe(ping.json.id);
    expect(webhookViolations(ping.headers, ping.raw)).toEqual([]);
    expect(ok.stdout).toContain(ping.json.id);
    expect(verifyWebhook(ping.raw, String(ping.headers['svc-signature']), secret)).toBe(true);

    receiver.answer = () => ({ status: 500, body: 'nope' });
    const failed = await cli(['webhooks', 'test', id], env);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toMatch(new RegExp(`^error: ping evt_[0-9a-f]{32} to ${id} failed: HTTP 500: nope\\n$`));
    // With --json, what the receiver answered goes with the error.
    const failedJson = await cli(['--json', 'webhooks', 'test', id], env);
    expect(failedJson.code).toBe(1);
    expect(JSON.parse(failedJson.stdout)).toEqual({
      error: expect.stringMatching(new RegExp(`^ping evt_[0-9a-f]{32} to ${id} failed: HTTP 500: nope$`)),
      ok: false,
      status: 500,
      eventId: expect.stringMatching(/^evt_[0-9a-f]{32}$/),
    });
    await cliJson(['webhooks', 'remove', id], env);
  });

  it('rotates the secret: both sign for 24 hours (two v1 values), then only the new one', async () => {
    const { id, secret: old } = await add('/rotate');
    const rotated = await cli(['webhooks', 'rotate-secret', id], env);
    expect(rotated.code).toBe(0);
    const [, until, fresh] = /^signing secret, shown only now; the previous one signs too until (\S+): (whsec_[\w-]{43})$/m.exec(rotated.stdout) ?? [];
    expect([until, fresh]).toEqual([expect.any(String), expect.stringMatching(/^whsec_/)]);
    const [newSecret, validUntil] = [fresh, Date.parse(until)];
    expect(newSecret).not.toBe(old);
    expect(Math.abs(validUntil - Date.now() - 24 * 3_600_000)).toBeLessThan(60_000);
    expect((await list()).find((e) => e.id === id)?.previousSecretUntil).toBe(until);

    await cliJson(['webhooks', 'test', id], env);
    const both = receiver.received[0];
    expect(String(both.headers['svc-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64},v1=[0-9a-f]{64}$/);
    for (const secret of [newSecret, old]) expect(verifyWebhook(both.raw, String(both.headers['svc-signature']), secret)).toBe(true);

    // A day later the old secret no longer signs.
    await db.query(`UPDATE webhook_endpoints SET previous_secret_until = ${config.usesPostgres ? "now() - interval '1 second'" : "'2000-01-01 00:00:00.000'"}`);
    await cliJson(['webhooks', 'test', id], env);
    const one = receiver.received[1];
    expect(String(one.headers['svc-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(one.raw, String(one.headers['svc-signature']), newSecret)).toBe(true);
    expect(verifyWebhook(one.raw, String(one.headers['svc-signature']), old)).toBe(false);
    expect((await list()).find((e) => e.id === id)?.previousSecretUntil).toBeNull();
    expect(rotated.stdout).not.toContain('warning:');

    // Two rotations within the 24 hours: two secrets sign at most, and the operator is told which stops.
    const second = await cli(['webhooks', 'rotate-secret', id], env);
    const third = await cli(['webhooks', 'rotate-secret', id], env);
    const secondUntil = /the previous one signs too until (\S+):/.exec(second.stdout)?.[1];
    expect(third.stdout).toMatch(
      new RegExp(`\\nwarning: the secret before the previous rotation, which was to sign until ${secondUntil?.replace(/\./g, '\\.')}, signs no more: a receiver still verifying with it fails from now on\\n$`),
    );
    await cliJson(['webhooks', 'remove', id], env);
  });

  it('says what to do when the server key changed and the secret no longer opens; rotate-secret recovers', async () => {
    const { id, secret: old } = await add('/rekeyed');
    const rekeyed = { ...env, API_KEY_HASH_KEY: 'another server key, also long enough' };
    const refused = await cli(['webhooks', 'test', id], rekeyed);
    // The token signing keys, sealed under the old server key too, are said not to open as well.
    expect(refused).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(
        /^error: \[Keyring\] signing key \S+ cannot be decrypted with this API_KEY_HASH_KEY \(stored under another value\)[^\n]*\nerror: the signing secret cannot be decrypted \(was API_KEY_HASH_KEY changed\?\): rotate the secret\n$/,
      ),
    });
    const rotated = await cliJson<Added & { previousSecretUntil: string | null }>(['webhooks', 'rotate-secret', id], rekeyed);
    expect(rotated.previousSecretUntil).toBeNull();
    await cliJson(['webhooks', 'test', id], rekeyed);
    const [ping] = receiver.received;
    expect(String(ping.headers['svc-signature'])).toMatch(/^t=\d+,v1=[0-9a-f]{64}$/);
    expect(verifyWebhook(ping.raw, String(ping.headers['svc-signature']), rotated.secret)).toBe(true);
    expect(verifyWebhook(ping.raw, String(ping.headers['svc-signature']), old)).toBe(false);
    await cliJson(['webhooks', 'remove', id], env);
  });

  it('lists state, failing since, last delivery, last error and pending events; disables, enables and removes', async () => {
    const { id } = await add('/listed');
    // No process delivers here: the import's event waits in the outbox.
    await cliJson(['visits', 'import', file('visits.ndjson', [visitRecord(1, 'B-1'), visitRecord(2, 'B-1')], true)], env);
    expect(await list()).toEqual([
      {
        id,
        credential,
        url: `${receiver.url}/listed`,
        allowPrivate: false,
        state: 'active',
        failingSince: null,
        lastDeliveryAt: null,
        lastError: null,
        lastErrorAt: null,
        pendingEvents: 1,
        previousSecretUntil: null,
        createdAt: expect.any(String),
      },
    ]);
    expect((await cli(['webhooks', 'disable', id], env)).stdout).toBe(`${id} disabled\n`);
    expect((await list())[0]).toMatchObject({ state: 'disabled', pendingEvents: 1 });
    expect((await cli(['webhooks', 'enable', id], env)).stdout).toBe(`${id} enabled\n`);
    expect((await list())[0]).toMatchObject({ state: 'active' });
    // An enabled endpoint of a disabled credential is sent nothing: the list says so.
    await cliJson(['credentials', 'disable', credential], env);
    expect((await list())[0]).toMatchObject({ state: 'credential-disabled', pendingEvents: 1 });
    expect((await cli(['webhooks', 'list'], env)).stdout).toMatch(new RegExp(`^${id}  credential-disabled  `));
    await cliJson(['credentials', 'enable', credential], env);
    expect((await list())[0]).toMatchObject({ state: 'active' });

    const at = config.usesPostgres ? "'2026-11-20T10:00:00Z'" : "'2026-11-20 10:00:00.000'";
    await db.query(`UPDATE webhook_endpoints SET failing_since = ${at}, last_error = 'HTTP 503', last_error_at = ${at}, last_delivery_at = ${at}`);
    const text = (await cli(['webhooks', 'list'], env)).stdout;
    expect(text).toBe(
      `${id}  failing  ${receiver.url}/listed\n` +
        `  credential ${credential}  pending events 1  last delivery 2026-11-20T10:00:00.000Z\n` +
        '  failing since 2026-11-20T10:00:00.000Z\n' +
        '  last error (2026-11-20T10:00:00.000Z): HTTP 503\n',
    );

    expect((await cli(['webhooks', 'remove', id], env)).stdout).toBe(`${id} removed\n`);
    expect(await list()).toEqual([]);
    expect(await db.query('SELECT event_id FROM webhook_deliveries')).toEqual([]);
    expect((await cli(['webhooks', 'list'], env)).stdout).toBe('(no webhook endpoints)\n');
    // The commands' application contexts never deliver: the event waited until it was removed.
    expect(receiver.received).toEqual([]);
  });

  it('moves an endpoint to another URL: its id, signing secret and waiting events stay; the URL is checked as when added', async () => {
    const { id, secret } = await add('/before');
    // No process delivers here: the import's event waits in the outbox for the endpoint.
    await cliJson(['visits', 'import', file('moved.ndjson', [visitRecord(11, 'B-1')], true)], env);
    expect(await list()).toEqual([expect.objectContaining({ id, url: `${receiver.url}/before`, pendingEvents: 1 })]);

    expect(await cli(['webhooks', 'set-url', id, '--url', `${receiver.url}/after`], env)).toEqual({ code: 0, stdout: `${id} now sends to ${receiver.url}/after\n`, stderr: '' });
    expect(await list()).toEqual([expect.objectContaining({ id, url: `${receiver.url}/after`, allowPrivate: false, pendingEvents: 1, state: 'active' })]);
    // Signed with the secret given when it was added, at the new URL.
    expect((await cli(['webhooks', 'test', id], env)).code).toBe(0);
    expect(receiver.received.map((r) => r.path)).toEqual(['/after']);
    expect(verifyWebhook(receiver.received[0].raw, String(receiver.received[0].headers['svc-signature']), secret)).toBe(true);

    const refused = async (args: string[], message: RegExp): Promise<void> => {
      const result = await cli(['webhooks', 'set-url', ...args], env);
      expect({ args, code: result.code, stdout: result.stdout }).toEqual({ args, code: 1, stdout: '' });
      expect(result.stderr).toMatch(message);
    };
    await refused(['wh_nope', '--url', `${receiver.url}/x`], /^error: webhook endpoint 'wh_nope' does not exist\n$/);
    await refused([id], /^error: required option '--url <url>' not specified/);
    await refused([id, '--url', 'hook'], /^error: --url: 'hook' is not an absolute URL\n$/);
    await refused([id, '--url', 'https://10.1.2.3/hook'], /^error: --url: the URL is refused: 10\.1\.2\.3 is a private, link-local or reserved address/);
    // Another endpoint of the credential at that URL: its receiver would get every event twice.
    const other = await add('/other');
    await refused([id, '--url', `${receiver.url}/other`], new RegExp(`^error: --url: credential ${credential} has an endpoint at ${receiver.url}/other already \\(${other.id}\\)\\n$`));
    // Listed oldest first, then by id: two added within the same second (SQLite keeps seconds) come in either order.
    const urls = async (): Promise<string[][]> => (await list()).map((e) => [e.id, e.url]).sort(([a], [b]) => (a < b ? -1 : 1));
    expect(await urls()).toEqual(
      [
        [id, `${receiver.url}/after`],
        [other.id, `${receiver.url}/other`],
      ].sort(([a], [b]) => (a < b ? -1 : 1)),
    );

    // --allow-private is given anew with every URL.
    const moved = async (): Promise<EndpointSummary | undefined> => (await list()).find((e) => e.id === id);
    expect(await cliJson(['webhooks', 'set-url', id, '--url', 'https://10.1.2.3/hook', '--allow-private'], env)).toEqual({ id, url: 'https://10.1.2.3/hook', allowPrivate: true });
    expect(await moved()).toMatchObject({ id, allowPrivate: true, pendingEvents: 1 });
    await cliJson(['webhooks', 'set-url', id, '--url', `${receiver.url}/back`], env);
    expect(await moved()).toMatchObject({ id, url: `${receiver.url}/back`, allowPrivate: false, pendingEvents: 1 });
    for (const endpoint of await list()) await cliJson(['webhooks', 'remove', endpoint.id], env);
  });

  it('runs in the built binary', async () => {
    const result = await spawnCli(['--json', 'webhooks', 'list'], env);
    expect(result).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
  });
});
