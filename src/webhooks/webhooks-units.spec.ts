import { createHmac } from 'node:crypto';
import { verifyWebhook } from '../../examples/verify-webhook.js';
import { backoffMs } from './webhook-dispatcher.js';
import { newSigningSecret, signingSecrets, webhookSecretBox } from './webhook-secrets.js';
import { signatureHeader } from './webhook-signature.js';
import { addressRefusal, checkEndpointUrl } from './webhook-url.js';

describe('signing secrets at rest', () => {
  const box = webhookSecretBox('a server key of sixteen characters or more');

  it('seal to AES-256-GCM text that opens to the secret, never containing it', () => {
    const secret = newSigningSecret();
    expect(secret).toMatch(/^whsec_[A-Za-z0-9_-]{43}$/);
    const sealed = box.seal(secret);
    expect(sealed).toMatch(/^v1\.[A-Za-z0-9_-]{16}\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    expect(sealed).not.toContain(secret.slice(6, 20));
    expect(box.seal(secret)).not.toBe(sealed);
    expect(box.open(sealed)).toBe(secret);
  });

  it('refuse to open under another server key or when edited', () => {
    const sealed = box.seal(newSigningSecret());
    expect(() => webhookSecretBox('another server key, also long enough').open(sealed)).toThrow();
    const [format, iv, tag, text] = sealed.split('.') as [string, string, string, string];
    const edited = Buffer.from(text, 'base64url');
    edited[0] ^= 1;
    expect(() => box.open([format, iv, tag, edited.toString('base64url')].join('.'))).toThrow();
    expect(() => box.open('plain')).toThrow('not a sealed webhook secret');
  });

  it('sign with the previous secret too only until its time is over', () => {
    const [current, previous] = [newSigningSecret(), newSigningSecret()];
    const stored = { secret: box.seal(current), previousSecret: box.seal(previous), previousSecretUntil: new Date('2026-11-23T10:00:00Z') };
    expect(signingSecrets(box, stored, new Date('2026-11-23T09:59:59Z'))).toEqual([current, previous]);
    expect(signingSecrets(box, stored, new Date('2026-11-23T10:00:00Z'))).toEqual([current]);
    expect(signingSecrets(box, { ...stored, previousSecret: null }, new Date(0))).toEqual([current]);
    expect(() => signingSecrets(webhookSecretBox('another server key, also long enough'), stored, new Date(0))).toThrow(
      'the signing secret cannot be decrypted (was API_KEY_HASH_KEY changed?): rotate the secret',
    );
  });
});

describe('the svc-signature header', () => {
  const body = '{"id":"evt_1","type":"visits.changed","created":"2026-11-22T10:00:00.000Z","data":{"svcClientId":1001,"count":2}}';
  const at = new Date('2026-11-22T10:00:05.900Z');

  it('is t=<unix seconds>,v1=<hex HMAC-SHA-256 of "t.body"> per secret, keyed by the secret as shown', () => {
    const header = signatureHeader(body, ['whsec_new', 'whsec_old'], at);
    const hmac = (key: string) => createHmac('sha256', key).update(`1795341605.${body}`).digest('hex');
    expect(header).toBe(`t=1795341605,v1=${hmac('whsec_new')},v1=${hmac('whsec_old')}`);
  });

  it('is accepted by the README verifier with either secret, within 5 minutes only', () => {
    const header = signatureHeader(body, ['whsec_new', 'whsec_old'], at);
    for (const secret of ['whsec_new', 'whsec_old']) expect(verifyWebhook(body, header, secret, at.getTime())).toBe(true);
    expect(verifyWebhook(Buffer.from(body), header, 'whsec_new', at.getTime() + 299_000)).toBe(true);
    expect(verifyWebhook(body, header, 'whsec_new', at.getTime() + 301_000)).toBe(false);
    expect(verifyWebhook(body, header, 'whsec_other', at.getTime())).toBe(false);
    expect(verifyWebhook(`${body} `, header, 'whsec_new', at.getTime())).toBe(false);
    expect(verifyWebhook(body, header.replace(/^t=\d+/, 't=1795341604'), 'whsec_new', at.getTime())).toBe(false);
    expect(verifyWebhook(body, 't=1795341605,v1=zz', 'whsec_new', at.getTime())).toBe(false);
    expect(verifyWebhook(body, '', 'whsec_new', at.getTime())).toBe(false);
  });
});

describe('backoff', () => {
  it('doubles per attempt from the base, half of it random, up to an hour', () => {
    expect([1, 2, 3, 4].map((n) => backoffMs(100, n, () => 0))).toEqual([50, 100, 200, 400]);
    expect([1, 2, 3, 4].map((n) => backoffMs(100, n, () => 1))).toEqual([100, 200, 400, 800]);
    expect(backoffMs(10_000, 30, () => 1)).toBe(3_600_000);
    expect(backoffMs(10_000, 30, () => 0)).toBe(1_800_000);
  });
});

describe('endpoint addresses', () => {
  const strict = { allowPrivate: false, allowHttpLoopback: false };
  const dev = { allowPrivate: false, allowHttpLoopback: true };
  const privateOk = { allowPrivate: true, allowHttpLoopback: false };

  it('refuses private, link-local and reserved addresses unless private ones are allowed', () => {
    for (const address of [
      '10.1.2.3', '172.16.0.1', '192.168.1.1', '169.254.169.254', '100.64.0.1', '0.0.0.0', 'fd00::1', 'fe80::1', '::ffff:10.0.0.1', '::',
      // IPv6 forms with an IPv4 address inside, and deprecated local ranges
      '::ffff:a00:1', '::7f00:1', '::ffff:0:7f00:1', '2002:7f00:1::', '64:ff9b:1::a00:1', '2001:0:4136:e378:8000:63bf:3fff:fdd2', 'fec0::1', '100::1',
      // documentation ranges, which no receiver is at (a delivery to them hangs until its timeout)
      '192.0.2.1', '198.51.100.1', '203.0.113.1', '2001:db8::1', '192.88.99.1',
    ]) {
      expect([address, addressRefusal(address, 'https:', strict)]).toEqual([address, expect.stringMatching(/private, link-local or reserved.*--allow-private/)]);
      expect([address, addressRefusal(address, 'https:', privateOk)]).toEqual([address, null]);
    }
    for (const address of ['93.184.215.14', '2606:2800:21f:cb07:6820:80da:af6b:8b2c', '::ffff:8.8.8.8']) {
      expect([address, addressRefusal(address, 'https:', strict)]).toEqual([address, null]);
    }
  });

  it('allows loopback with WEBHOOKS_ALLOW_HTTP_LOOPBACK (over http too) or --allow-private, and http to nothing else', () => {
    expect(addressRefusal('127.0.0.1', 'https:', strict)).toMatch(/loopback/);
    expect(addressRefusal('::ffff:7f00:1', 'https:', strict)).toMatch(/loopback/);
    expect(addressRefusal('::1', 'http:', dev)).toBeNull();
    expect(addressRefusal('127.0.0.1', 'https:', privateOk)).toBeNull();
    expect(addressRefusal('127.0.0.1', 'http:', privateOk)).toMatch(/^http is allowed only to a loopback address/);
    expect(addressRefusal('93.184.215.14', 'http:', dev)).toMatch(/^http is allowed only to a loopback address/);
    expect(addressRefusal('10.0.0.1', 'http:', { allowPrivate: true, allowHttpLoopback: true })).toMatch(/^http is allowed only/);
  });

  it('checks a URL when it is added', async () => {
    await expect(checkEndpointUrl('not a url', strict)).rejects.toThrow("'not a url' is not an absolute URL");
    await expect(checkEndpointUrl('ftp://93.184.215.14/', strict)).rejects.toThrow('the URL must be https');
    await expect(checkEndpointUrl('http://93.184.215.14/hook', strict)).rejects.toThrow(/http is allowed only to a loopback address/);
    await expect(checkEndpointUrl('https://user:pw@93.184.215.14/', strict)).rejects.toThrow('must not carry a user name or password');
    await expect(checkEndpointUrl('https://93.184.215.14/#x', strict)).rejects.toThrow('must not have a fragment');
    await expect(checkEndpointUrl('https://10.0.0.5/hook', strict)).rejects.toThrow(/private, link-local or reserved/);
    await expect(checkEndpointUrl('https://[fe80::1]/hook', strict)).rejects.toThrow(/fe80::1 is a private, link-local/);
    await expect(checkEndpointUrl('https://nothing.invalid/hook', strict)).rejects.toThrow("the host 'nothing.invalid' does not resolve");
    await expect(checkEndpointUrl('http://localhost:8080/hook', strict)).rejects.toThrow(/http is allowed only/);
    // A name that does not resolve over http: the rule that refuses it whatever it resolves to, not the lookup.
    await expect(checkEndpointUrl('http://nothing.invalid/hook', strict)).rejects.toThrow("the URL must be https (http is allowed only to a loopback address with WEBHOOKS_ALLOW_HTTP_LOOPBACK=true): 'http://nothing.invalid/hook'");
    await expect(checkEndpointUrl('http://nothing.invalid/hook', dev)).rejects.toThrow("the host 'nothing.invalid' does not resolve");
    expect((await checkEndpointUrl('http://localhost:8080/hook', dev)).href).toBe('http://localhost:8080/hook');
    expect((await checkEndpointUrl('https://10.0.0.5/hook', privateOk)).href).toBe('https://10.0.0.5/hook');
    expect((await checkEndpointUrl('HTTPS://93.184.215.14/a b', strict)).href).toBe('https://93.184.215.14/a%20b');
    // Port 0 would be sent to 80 or 443 (Node's client takes it for none); an empty query is none.
    await expect(checkEndpointUrl('https://93.184.215.14:0/hook', strict)).rejects.toThrow("the URL's port must be from 1 to 65535: 'https://93.184.215.14:0/hook'");
    await expect(checkEndpointUrl('http://127.0.0.1:0/hook', dev)).rejects.toThrow("the URL's port must be from 1 to 65535");
    expect((await checkEndpointUrl('https://93.184.215.14/hook?', strict)).href).toBe('https://93.184.215.14/hook');
    expect((await checkEndpointUrl('https://93.184.215.14/hook?a=1', strict)).href).toBe('https://93.184.215.14/hook?a=1');
  });
});
