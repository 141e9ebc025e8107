import type { AddressInfo } from 'node:net';
import { connect, type Socket } from 'node:net';
import request from 'supertest';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { Menu } from '../../src/menus/entities/menu.entity.js';
import { MenusRepository } from '../../src/menus/menus.repository.js';
import { UPLOADS_BUSY_DETAIL, UploadsInFlight } from '../../src/menus/uploads-in-flight.js';
import { MetricsService } from '../../src/metrics/metrics.service.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { eventually } from '../helpers/eventually.js';
import { makeImage } from '../helpers/images.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

const MiB = 1024 * 1024;

/** A connection to the service written to by hand: what came back so far, and whether the service closed it. */
interface RawConnection {
  socket: Socket;
  received(): string;
  /** Resolves once `text` has come back. */
  until(text: string): Promise<string>;
  /** Resolves with everything that came back once the service has closed the connection. */
  closed: Promise<string>;
}

/** The upload route's counts in the metrics: requests answered (any status) and those whose connection closed first. */
async function uploadCounts(t: TestApp): Promise<{ answered: number; aborted: number }> {
  const text = await t.app.get(MetricsService).registry.metrics();
  const sum = (pattern: RegExp): number => [...text.matchAll(pattern)].reduce((total, m) => total + Number(m[1]), 0);
  return {
    answered: sum(/^results_http_requests_total\{(?=[^}]*method="POST")(?=[^}]*route="\/menus\/dishes")[^}]*\} (\d+)$/gm),
    aborted: sum(/^results_http_requests_aborted_total\{(?=[^}]*method="POST")(?=[^}]*route="\/menus\/dishes")[^}]*\} (\d+)$/gm),
  };
}

async function startWithMenu(settings: Record<string, string>): Promise<{ t: TestApp; port: number }> {
  const t = await startTestApp(settings);
  await t.app.listen(0, '127.0.0.1');
  await seedClients(t);
  const menu = Object.assign(new Menu(), { id: 101, clientId: 1001, name: 'Menu 101', startDate: '2026-01-01', endDate: null });
  await t.app.get(MenusRepository).saveMenus([{ menu, dishes: [] }]);
  return { t, port: (t.app.getHttpServer().address() as AddressInfo).port };
}

function open(port: number, head: string): RawConnection {
  const socket = connect(port, '127.0.0.1');
  let text = '';
  const waiters: (() => void)[] = [];
  socket.on('data', (chunk: Buffer) => {
    text += chunk.toString('latin1');
    for (const wake of waiters.splice(0)) wake();
  });
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(text)));
  socket.write(head);
  return {
    socket,
    received: () => text,
    until: async (wanted) => {
      while (!text.includes(wanted)) {
        await Promise.race([new Promise<void>((wake) => waiters.push(wake)), closed]);
        if (socket.destroyed && !text.includes(wanted)) throw new Error(`closed without ${JSON.stringify(wanted)}: ${JSON.stringify(text.slice(0, 300))}`);
      }
      return text;
    },
    closed,
  };
}

/** The head of an upload with the credential's key and token and `more` header lines. */
function uploadHead(credential: { apiKey: string; token: string }, more: string): string {
  return (
    'POST /menus/dishes?SvcClientId=1001 HTTP/1.1\r\nHost: 127.0.0.1\r\n' +
    `svc-api-key: ${credential.apiKey}\r\nAuthorization: Bearer ${credential.token}\r\n` +
    `Content-Type: multipart/form-data; boundary=b\r\n${more}\r\n`
  );
}

/** An upload's head declaring `bytes` that waits for the 100 Continue before its body. */
const waitingUpload = (credential: { apiKey: string; token: string }, bytes: number) => uploadHead(credential, `Content-Length: ${bytes}\r\nExpect: 100-continue\r\n`);

/** The start of the image part: what a client sends before its image bytes. */
const PART_HEAD = '--b\r\nContent-Disposition: form-data; name="file"; filename="dish.png"\r\nContent-Type: image/png\r\n\r\n';

/** The status line, headers and JSON body of the one final answer in `text` (after any 100 Continue). */
function finalAnswer(text: string): { status: number; headers: Record<string, string>; body: unknown } {
  const answer = text.replace(/^HTTP\/1\.1 100 Continue\r\n\r\n/, '');
  const [head, body] = [answer.slice(0, answer.indexOf('\r\n\r\n')), answer.slice(answer.indexOf('\r\n\r\n') + 4)];
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) };
}

/** A 503 for want of room: Retry-After, the problem, the rate limit's headers, and the connection closed. */
async function expectBusy(connection: RawConnection): Promise<void> {
  const text = await connection.closed;
  // Refused before its body was asked for: no 100 Continue.
  expect(text.startsWith('HTTP/1.1 503 ')).toBe(true);
  const answer = finalAnswer(text);
  expect(answer.status).toBe(503);
  expect(answer.headers['retry-after']).toBe('5');
  expect(answer.headers['content-type']).toBe('application/problem+json; charset=utf-8');
  expect(answer.headers.connection).toBe('close');
  expect(answer.headers['ratelimit-policy']).toMatch(/"default";q=\d+;w=60/);
  expect(answer.body).toEqual({
    title: 'Service Unavailable',
    status: 503,
    detail: UPLOADS_BUSY_DETAIL,
    instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
  });
}

describe(`upload bodies in flight (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let port: number;
  const partners: { credential: IssuedCredential; apiKey: string; token: string }[] = [];
  const connections: RawConnection[] = [];

  beforeAll(async () => {
    // 4 MiB for uploads, 2 MiB of it at most for one credential; nothing stalls for as long as the tests take.
    ({ t, port } = await startWithMenu({ UPLOADS_IN_FLIGHT_MB: '4', UPLOADS_STALL_SECONDS: '3600' }));
    for (let i = 0; i < 3; i++) {
      const credential = await issueCredential(t);
      partners.push({ credential, apiKey: credential.apiKey, token: await tokenFor(t.http, credential) });
    }
  });
  afterAll(async () => {
    for (const connection of connections) connection.socket.destroy();
    await t.close();
  });

  const track = (connection: RawConnection): RawConnection => {
    connections.push(connection);
    return connection;
  };

  it("refuses an upload with a 503 past the budget or past its credential's half of it, and takes it once room is given back", async () => {
    const [a, b, c] = partners;
    const inFlight = t.app.get(UploadsInFlight);
    // A holds 1.5 MiB: let in (asked for its body), sends the start of it and stops.
    const first = track(open(port, waitingUpload(a, 1.5 * MiB)));
    await first.until('HTTP/1.1 100 Continue\r\n\r\n');
    first.socket.write(PART_HEAD + 'x'.repeat(64 * 1024));
    expect(inFlight.inFlight).toBe(1.5 * MiB);
    // A's second would take its share past 2 MiB: refused, though the budget has room.
    await expectBusy(track(open(port, waitingUpload(a, MiB))));
    // B's 2 MiB fit (3.5 MiB in all).
    const second = track(open(port, waitingUpload(b, 2 * MiB)));
    await second.until('HTTP/1.1 100 Continue\r\n\r\n');
    expect(inFlight.inFlight).toBe(3.5 * MiB);
    // C's 1 MiB would take the budget past 4 MiB; an upload without a length counts as the largest form (5 MiB and 256 KiB).
    await expectBusy(track(open(port, waitingUpload(c, MiB))));
    await expectBusy(track(open(port, uploadHead(c, 'Transfer-Encoding: chunked\r\nExpect: 100-continue\r\n'))));
    expect(inFlight.inFlight).toBe(3.5 * MiB);

    // A's client goes away: its room comes back, and C's upload is taken whole. The metrics
    // count A's upload as aborted, not as answered (the three 503s are).
    const before = await uploadCounts(t);
    first.socket.destroy();
    expect(await eventually(() => Promise.resolve(inFlight.inFlight), (bytes) => bytes === 2 * MiB)).toBe(2 * MiB);
    expect(await eventually(() => uploadCounts(t), (counts) => counts.aborted > before.aborted)).toEqual({ answered: before.answered, aborted: before.aborted + 1 });
    const image = await makeImage('png');
    const res = await request(t.http)
      .post('/menus/dishes?SvcClientId=1001')
      .set('svc-api-key', c.apiKey)
      .set('Authorization', `Bearer ${c.token}`)
      .attach('file', image, { filename: 'dish.png', contentType: 'image/png' })
      .field('json', JSON.stringify({ menuId: 101, code: 'HAL-01', description: 'Chargrilled halloumi', type: 'Starter' }));
    expect(res.status).toBe(200);
    expect(res.headers['cache-control']).toBe('no-store');
    expect(res.body.data.dish).toMatchObject({ menuId: 101, code: 'HAL-01', description: 'Chargrilled halloumi' });
    expect(await uploadCounts(t)).toEqual({ answered: before.answered + 1, aborted: before.aborted + 1 });
    // Its room is given back once its response is done.
    expect(await eventually(() => Promise.resolve(inFlight.inFlight), (bytes) => bytes === 2 * MiB)).toBe(2 * MiB);
    second.socket.destroy();
    expect(await eventually(() => Promise.resolve(inFlight.inFlight), (bytes) => bytes === 0)).toBe(0);
  });
});

describe(`an upload whose body stops arriving (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let port: number;
  let partner: { apiKey: string; token: string };

  beforeAll(async () => {
    ({ t, port } = await startWithMenu({ UPLOADS_STALL_SECONDS: '1' }));
    const credential = await issueCredential(t);
    partner = { apiKey: credential.apiKey, token: await tokenFor(t.http, credential) };
  });
  afterAll(async () => {
    await t.close();
  });

  it('is dropped with its connection, which gives its room back', async () => {
    const inFlight = t.app.get(UploadsInFlight);
    const connection = open(port, waitingUpload(partner, 4 * MiB));
    await connection.until('HTTP/1.1 100 Continue\r\n\r\n');
    connection.socket.write(PART_HEAD + 'x'.repeat(256 * 1024));
    // No answer: the connection is closed once nothing has come for a second, and the room is free.
    expect(await connection.closed).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    expect(await eventually(() => Promise.resolve(inFlight.inFlight), (bytes) => bytes === 0)).toBe(0);
    // Counted as aborted, with no status: none was sent.
    expect(await eventually(() => uploadCounts(t), (counts) => counts.aborted === 1)).toEqual({ answered: 0, aborted: 1 });
  });
});

describe(`an upload whose body comes slower than the least rate (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let port: number;
  let partner: { apiKey: string; token: string };

  beforeAll(async () => {
    // At least 64 KiB over each second.
    ({ t, port } = await startWithMenu({ UPLOADS_STALL_SECONDS: '1', UPLOADS_MIN_KB_PER_SECOND: '64' }));
    const credential = await issueCredential(t);
    partner = { apiKey: credential.apiKey, token: await tokenFor(t.http, credential) };
  });
  afterAll(async () => {
    await t.close();
  });

  it('is dropped with its connection though bytes keep coming, which gives its room back', async () => {
    const inFlight = t.app.get(UploadsInFlight);
    const connection = open(port, waitingUpload(partner, 4 * MiB));
    await connection.until('HTTP/1.1 100 Continue\r\n\r\n');
    connection.socket.write(PART_HEAD);
    // A byte every 20 ms, 50 bytes a second, for as long as the connection lasts.
    const trickle = setInterval(() => connection.socket.write('x'), 20);
    try {
      expect(await connection.closed).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    } finally {
      clearInterval(trickle);
    }
    expect(await eventually(() => Promise.resolve(inFlight.inFlight), (bytes) => bytes === 0)).toBe(0);
    expect(await eventually(() => uploadCounts(t), (counts) => counts.aborted === 1)).toEqual({ answered: 0, aborted: 1 });
  });

  it('takes a body whose rest, fewer bytes than the rate asks over the time, comes within it', async () => {
    const image = await makeImage('png', 8, 8);
    const tail = `\r\n--b\r\nContent-Disposition: form-data; name="json"\r\n\r\n{"menuId":101,"code":"SLOW-TAIL","description":"d","type":"t"}\r\n--b--\r\n`;
    const body = Buffer.concat([Buffer.from(PART_HEAD, 'latin1'), image, Buffer.from(tail, 'latin1')]);
    const connection = open(port, waitingUpload(partner, body.length));
    await connection.until('HTTP/1.1 100 Continue\r\n\r\n');
    // Far fewer than 64 KiB in the second, in two writes: all that was declared.
    connection.socket.write(body.subarray(0, 100));
    await new Promise((resolve) => setTimeout(resolve, 300));
    connection.socket.write(body.subarray(100));
    // The whole answer: its JSON reads.
    const whole = (text: string): boolean => {
      try {
        finalAnswer(text);
        return true;
      } catch {
        return false;
      }
    };
    const answer = finalAnswer(await eventually(() => Promise.resolve(connection.received()), whole, 30_000, 20));
    expect(answer.status).toBe(200);
    expect(answer.body).toMatchObject({ data: { dish: { code: 'SLOW-TAIL', image: { width: 8, height: 8 } } } });
    connection.socket.destroy();
  });
});
