import { eventually } from '../../test/helpers/eventually.js';
import { WebhookReceiver } from '../../test/helpers/webhook-receiver.js';
import { MAX_RESPONSE_BYTES, postWebhook, type WebhookRequest } from './webhook-sender.js';

/** The sender against a real receiver on loopback. */
describe('postWebhook', () => {
  const receiver = new WebhookReceiver();
  const dev = { allowPrivate: false, allowHttpLoopback: true };
  const post = (path: string, over: Partial<WebhookRequest> = {}) =>
    postWebhook({ url: `${receiver.url}${path}`, body: '{"id":"evt_1"}', headers: { 'content-type': 'application/json' }, policy: dev, timeoutMs: 2000, ...over });

  beforeAll(() => receiver.start());
  afterAll(() => receiver.stop());
  beforeEach(() => {
    receiver.received.length = 0;
  });

  it('posts the body with its headers and takes a 2xx as success', async () => {
    receiver.answer = () => ({ status: 204 });
    expect(await post('/hook')).toEqual({ ok: true, status: 204, error: null });
    expect(receiver.received).toHaveLength(1);
    expect(receiver.received[0]).toMatchObject({ path: '/hook', raw: '{"id":"evt_1"}' });
    expect(receiver.received[0]?.headers).toMatchObject({ 'content-type': 'application/json', 'content-length': '14' });
  });

  it('does not follow a redirect: it is a failure naming it', async () => {
    receiver.answer = (req) => (req.path === '/moved' ? { status: 302, headers: { location: `${receiver.url}/elsewhere` } } : { status: 200 });
    expect(await post('/moved')).toEqual({ ok: false, status: 302, error: 'HTTP 302 (redirects are not followed)' });
    expect(receiver.received.map((r) => r.path)).toEqual(['/moved']);
  });

  it('reports a 304 as what it is, a failure that is no redirect', async () => {
    receiver.answer = () => ({ status: 304 });
    expect(await post('/hook')).toEqual({ ok: false, status: 304, error: 'HTTP 304' });
  });

  it('reports a refusal with the start of its body, on one line', async () => {
    receiver.answer = () => ({ status: 503, body: `down for\nmaintenance ${'.'.repeat(500)}` });
    const result = await post('/hook');
    expect(result).toMatchObject({ ok: false, status: 503 });
    expect(result.error).toMatch(/^HTTP 503: down for maintenance \.+$/);
    expect(result.error!.length).toBeLessThan(220);
  });

  it("keeps no control character of a refusal's body: a receiver cannot drive the operator's terminal", async () => {
    receiver.answer = () => ({ status: 500, body: '\x1b]0;PWNED\x07\x1b[2K\rfake line\x08\x08\u202e' });
    const result = await post('/hook');
    expect(result.error).toBe('HTTP 500: \uFFFD]0;PWNED\uFFFD\uFFFD[2K fake line\uFFFD\uFFFD\uFFFD');
  });

  it('gives up on a receiver that does not answer within the timeout', async () => {
    receiver.answer = () => 'hang';
    expect(await post('/slow', { timeoutMs: 300 })).toEqual({ ok: false, status: null, error: 'no answer within 300 ms' });
  });

  it('takes a 2xx as delivered when its status comes, without waiting for a body that does not end', async () => {
    receiver.answer = () => ({ status: 200, body: 'received, and then', open: true });
    expect(await post('/open', { timeoutMs: 30_000 })).toEqual({ ok: true, status: 200, error: null });
  });

  it('reports a refusal whose body does not end in time by its status and what came of the body', async () => {
    receiver.answer = () => ({ status: 503, body: 'overloaded', open: true });
    expect(await post('/open', { timeoutMs: 300 })).toEqual({ ok: false, status: 503, error: 'HTTP 503: overloaded' });
  });

  it(`reads at most ${MAX_RESPONSE_BYTES} bytes of a refusal and closes the connection`, async () => {
    receiver.answer = () => 'stream';
    const before = receiver.closedStreams;
    expect(await post('/endless', { timeoutMs: 30_000 })).toEqual({ ok: false, status: 500, error: `HTTP 500: ${'x'.repeat(200)}` });
    // The receiver sees the connection closed while it still writes.
    expect(await eventually(() => Promise.resolve(receiver.closedStreams), (n) => n > before, 10_000, 20)).toBe(before + 1);
  });

  it('reports a failed connection on one line, without the line break of an https request answered in plain http', async () => {
    const result = await post('/hook', { url: `https://127.0.0.1:${receiver.port}/hook` });
    expect(result).toMatchObject({ ok: false, status: null });
    expect(result.error).toMatch(/^\S.*EPROTO.*\S$/);
    expect(result.error).not.toMatch(/[\p{Cc}\p{Cf}]/u);
    expect(receiver.received).toHaveLength(0);
  });

  it('reports a refused connection', async () => {
    const closed = new WebhookReceiver();
    await closed.start();
    await closed.stop();
    const result = await postWebhook({ url: `${closed.url}/x`, body: '{}', headers: {}, policy: dev, timeoutMs: 2000 });
    expect(result).toEqual({ ok: false, status: null, error: expect.stringMatching(/^connect ECONNREFUSED 127\.0\.0\.1:\d+$/) });
  });

  it('checks the address connected to: a name that leads to loopback is refused without the allowance', async () => {
    const strict = { allowPrivate: false, allowHttpLoopback: false };
    const named = await post('/hook', { url: `https://localhost:${receiver.port}/hook`, policy: strict });
    expect(named).toEqual({ ok: false, status: null, error: expect.stringMatching(/^EADDRNOTALLOWED: refused: (127\.0\.0\.1|::1) is a loopback address/) });
    const literal = await post('/hook', { url: `https://127.0.0.1:${receiver.port}/hook`, policy: strict });
    expect(literal).toEqual({ ok: false, status: null, error: expect.stringMatching(/^refused: 127\.0\.0\.1 is a loopback address/) });
    const privateOnly = await post('/hook', { url: `https://10.255.255.1:9/hook`, policy: strict });
    expect(privateOnly.error).toMatch(/^refused: 10\.255\.255\.1 is a private, link-local or reserved address/);
    expect(receiver.received).toHaveLength(0);
  });
});
