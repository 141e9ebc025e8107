import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { closeConnectionsWithoutRequest, drainConnections, openConnections } from './idle-connections.js';

/** Larger than what the kernel's buffers of a loopback connection hold: most of it stays in the process while the reader is paused. */
const BODY_BYTES = 48 * 1024 * 1024;

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('draining the connections at shutdown', () => {
  let server: Server;
  let connections: ReadonlySet<Socket>;
  let answer: ServerResponse | undefined;

  beforeEach(async () => {
    answer = undefined;
    server = createServer((_req, res) => {
      answer = res;
      res.end(Buffer.alloc(BODY_BYTES, 'a'));
    });
    connections = openConnections(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    server.closeAllConnections();
    if (server.listening) await new Promise((resolve) => server.close(resolve));
  });

  /**
   * A client that asks for the body and reads none of it until told; `next` sends another
   * request the moment the first answer has come whole, as a client keeping the connection
   * alive does. Gives the answers' heads and body sizes once the connection ended.
   */
  function slowReader(next = false): { resume: () => void; received: Promise<{ heads: string[]; bodyBytes: number[] }> } {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    socket.pause();
    const request = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
    socket.write(request);
    const chunks: Buffer[] = [];
    let bytes = 0;
    let sent = false;
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      bytes += chunk.length;
      if (!next || sent) return;
      const head = Buffer.concat(chunks.slice(0, 4)).indexOf('\r\n\r\n');
      if (head >= 0 && bytes >= head + 4 + BODY_BYTES) {
        sent = true;
        socket.write(request);
      }
    });
    const received = new Promise<{ heads: string[]; bodyBytes: number[] }>((resolve) => {
      socket.on('close', () => {
        const all = Buffer.concat(chunks);
        const heads: string[] = [];
        const bodyBytes: number[] = [];
        for (let at = 0; at < all.length; ) {
          const end = all.indexOf('\r\n\r\n', at);
          if (end < 0) break;
          heads.push(all.subarray(at, end).toString('latin1'));
          const body = Math.min(BODY_BYTES, all.length - end - 4);
          bodyBytes.push(body);
          at = end + 4 + body;
        }
        resolve({ heads, bodyBytes });
      });
    });
    return { resume: () => socket.resume(), received };
  }

  it('lets an ended answer still being written finish, then closes its connection', async () => {
    const reader = slowReader();
    await until(() => answer !== undefined && answer.finished);
    expect(answer!.writableFinished).toBe(false);
    const drained = drainConnections(server, connections, 1000);
    expect([...connections].map((socket) => socket.destroyed)).toEqual([false]);
    reader.resume();
    const { heads, bodyBytes } = await reader.received;
    expect(heads).toHaveLength(1);
    expect(heads[0]).toMatch(new RegExp(`^HTTP/1\\.1 200 OK\\r\\n[\\s\\S]*Content-Length: ${BODY_BYTES}`));
    expect(bodyBytes).toEqual([BODY_BYTES]);
    await drained;
    await until(() => connections.size === 0);
  });

  it("is needed: Node's own close() cuts such an answer off", async () => {
    const reader = slowReader();
    await until(() => answer !== undefined && answer.finished);
    expect(answer!.writableFinished).toBe(false);
    server.close();
    reader.resume();
    const { bodyBytes } = await reader.received;
    expect(bodyBytes[0]).toBeLessThan(BODY_BYTES);
  });

  it('answers, with Connection: close, the next request of a client whose answer said keep-alive, rather than resetting it', async () => {
    const reader = slowReader(true);
    await until(() => answer !== undefined && answer.finished);
    const drained = drainConnections(server, connections, 1000);
    reader.resume();
    const { heads, bodyBytes } = await reader.received;
    expect(heads).toHaveLength(2);
    expect(heads[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: keep-alive/);
    expect(heads[1]).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: close/);
    expect(bodyBytes).toEqual([BODY_BYTES, BODY_BYTES]);
    await drained;
    await until(() => connections.size === 0);
  });

  /** A client that has read a whole answer and keeps its connection; `send` asks again on it. */
  async function keptAlive(): Promise<{ send: () => void; received: Promise<{ heads: string[] }> }> {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    const request = 'GET / HTTP/1.1\r\nHost: x\r\n\r\n';
    socket.write(request);
    const chunks: Buffer[] = [];
    let bytes = 0;
    socket.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      bytes += chunk.length;
    });
    const received = new Promise<{ heads: string[] }>((resolve) => {
      socket.on('close', () => {
        const all = Buffer.concat(chunks).toString('latin1');
        // The bodies are all 'a': every status line and its headers are a head.
        const heads = all.match(/HTTP\/1\.1 \d{3} [^\r]*\r\n(?:[^\r]+\r\n)*/g) ?? [];
        resolve({ heads });
      });
    });
    await until(() => bytes >= BODY_BYTES && answer !== undefined && answer.writableFinished);
    await until(() => [...connections].every((s) => !(s as Socket & { _httpMessage?: unknown })._httpMessage));
    return { send: () => socket.write(request), received };
  }

  it('answers, with Connection: close, the next request of a kept-alive connection that was between requests', async () => {
    const client = await keptAlive();
    const drained = drainConnections(server, connections, 60_000);
    expect([...connections].map((socket) => socket.destroyed)).toEqual([false]);
    client.send();
    const { heads } = await client.received;
    expect(heads).toHaveLength(2);
    expect(heads[0]).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: keep-alive/);
    expect(heads[1]).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*Connection: close/);
    await drained;
  });

  it('closes a kept-alive connection between requests once no request came for the linger', async () => {
    const client = await keptAlive();
    const drained = drainConnections(server, connections, 300);
    const { heads } = await client.received;
    expect(heads).toHaveLength(1);
    await drained;
    await until(() => connections.size === 0);
  });
});

describe('draining a connection with requests pipelined at shutdown', () => {
  let server: Server;
  let connections: ReadonlySet<Socket>;
  const handled: string[] = [];

  beforeEach(async () => {
    handled.length = 0;
    // The first request is answered after the drain has begun, the second later still.
    server = createServer((req, res) => {
      handled.push(req.url ?? '');
      setTimeout(() => res.end(`ok ${req.url}`), req.url === '/first' ? 200 : 400);
    });
    connections = openConnections(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    server.closeAllConnections();
    if (server.listening) await new Promise((resolve) => server.close(resolve));
  });

  /** A connection to the server, and what it was sent once it closes (latin1). */
  function opened(): { socket: Socket; closed: Promise<string> } {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.on('error', () => undefined);
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    return { socket, closed: new Promise<string>((resolve) => socket.once('close', () => resolve(Buffer.concat(chunks).toString('latin1')))) };
  }

  it('answers every request pipelined on it, the last with Connection: close, before it closes', async () => {
    const { socket, closed } = opened();
    socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\nPOST /second HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    await until(() => handled.length === 2);
    const drained = drainConnections(server, connections, 60_000);
    const all = await closed;
    expect(handled).toEqual(['/first', '/second']);
    const heads = all.match(/HTTP\/1\.1 \d{3} [^\r]*\r\n(?:[^\r]+\r\n)*/g) ?? [];
    expect(heads).toHaveLength(2);
    expect(heads[0]).toMatch(/Connection: keep-alive/);
    expect(heads[1]).toMatch(/Connection: close/);
    expect(all).toMatch(/ok \/first[\s\S]*ok \/second$/);
    await drained;
  });

  it('answers a request pipelined after the drain began behind those being answered, its answer the one that closes', async () => {
    const { socket, closed } = opened();
    socket.write('GET /first HTTP/1.1\r\nHost: x\r\n\r\nGET /second HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(() => handled.length === 2);
    const drained = drainConnections(server, connections, 60_000);
    socket.write('POST /third HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n');
    const all = await closed;
    expect(handled).toEqual(['/first', '/second', '/third']);
    const heads = all.match(/HTTP\/1\.1 \d{3} [^\r]*\r\n(?:[^\r]+\r\n)*/g) ?? [];
    expect(heads).toHaveLength(3);
    expect(heads.map((head) => /Connection: (\S+)/.exec(head)?.[1])).toEqual(['keep-alive', 'keep-alive', 'close']);
    expect(all).toMatch(/ok \/first[\s\S]*ok \/second[\s\S]*ok \/third$/);
    await drained;
  });
});

describe('closeConnectionsWithoutRequest at shutdown', () => {
  let server: Server;
  let connections: ReadonlySet<Socket>;
  let answers: ServerResponse[];

  beforeEach(async () => {
    answers = [];
    // Answers nothing: a request in progress for as long as the test wants.
    server = createServer((_req, res) => void answers.push(res));
    connections = openConnections(server);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  });
  afterEach(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
  });

  /** A client that sends `bytes` and then waits; resolves with whether its connection was closed, once it is. */
  function client(bytes: string): { closed: Promise<boolean>; socket: Socket } {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1', () => socket.write(bytes));
    socket.on('error', () => undefined);
    return { socket, closed: new Promise((resolve) => socket.on('close', () => resolve(true))) };
  }

  it('closes a connection that has sent nothing or part of a head, and leaves one whose request is being answered', async () => {
    const silent = client('');
    const partHead = client('GET /health/live HTTP/1.1\r\nHost: x\r\n');
    const asking = client('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    // All three connected, the whole request answered in part, the part head read (bytes, no response).
    await until(() => connections.size === 3 && answers.length === 1 && [...connections].filter((s) => s.bytesRead > 0).length === 2);
    closeConnectionsWithoutRequest(connections, 60_000);
    expect(await Promise.all([silent.closed, partHead.closed])).toEqual([true, true]);
    expect(asking.socket.destroyed).toBe(false);
    answers[0].end('ok');
    const text = await new Promise<string>((resolve) => asking.socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))));
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok$/);
  });
});
