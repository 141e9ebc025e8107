import { once } from 'node:events';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { continueOnRead } from './expect-continue.js';

/** Sends raw bytes on one connection (without closing its side) and collects everything the server writes until it closes. */
async function exchange(server: Server, bytes: string): Promise<string> {
  const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  socket.write(bytes);
  await once(socket, 'close');
  return Buffer.concat(chunks).toString('latin1');
}

/** Reads a request's whole body as text. */
async function text(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString();
}

describe('continueOnRead', () => {
  let server: Server;
  /** How long the handler waits before it reads the body (the body has then arrived whole). */
  let readAfterMs = 0;

  beforeAll(async () => {
    server = createServer((req, res) => {
      setTimeout(() => {
        void text(req).then((body) => res.end(`got ${body}`));
      }, readAfterMs);
    });
    continueOnRead(server);
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
  });

  afterAll(async () => {
    server.close();
    await once(server, 'close');
  });

  const expecting = (body: string): string =>
    `POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: ${body.length}\r\n\r\n${body}`;
  const last = 'GET /b HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n';

  it('keeps the connection when the body came whole with the head, read after it arrived', async () => {
    readAfterMs = 50;
    const answer = await exchange(server, expecting('hello') + last);
    expect(answer).not.toContain('100 Continue');
    const finals = [...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((m) => m[1]);
    expect(finals).toEqual(['200', '200']);
    expect(answer).toContain('got hello');
    // The first answer does not close the connection; only the second, which asked to.
    expect(answer.split('got hello')[0]).not.toMatch(/^Connection: close\r$/im);
  });

  it('asks for the body with a 100 when it is read before it came', async () => {
    readAfterMs = 0;
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.write('POST /a HTTP/1.1\r\nHost: x\r\nExpect: 100-continue\r\nContent-Length: 2\r\nConnection: close\r\n\r\n');
    await once(socket, 'data');
    expect(Buffer.concat(chunks).toString()).toBe('HTTP/1.1 100 Continue\r\n\r\n');
    socket.write('hi');
    await once(socket, 'close');
    const answer = Buffer.concat(chunks).toString();
    expect(answer).toMatch(/\r\n\r\nHTTP\/1\.1 200 OK\r\n/);
    expect(answer.endsWith('got hi')).toBe(true);
  });
});
