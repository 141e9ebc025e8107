import { createServer, type Server, type ServerResponse } from 'node:http';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { closeConnectionsWithoutRequest, closeIdleConnections, openConnections } from './idle-connections.js';

/** Larger than what the kernel's buffers of a loopback connection hold: most of it stays in the process while the reader is paused. */
const BODY_BYTES = 48 * 1024 * 1024;

async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}

describe('closeIdleConnections at shutdown', () => {
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
    await new Promise((resolve) => server.close(resolve));
  });

  /** A client that asks for the body and reads none of it until told; gives what it received once the connection ended. */
  function slowReader(): { resume: () => void; received: Promise<{ head: string; bodyBytes: number }> } {
    const socket = connect((server.address() as AddressInfo).port, '127.0.0.1');
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const chunks: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    const received = new Promise<{ head: string; bodyBytes: number }>((resolve) => {
      socket.on('close', () => {
        const all = Buffer.concat(chunks);
        const end = all.indexOf('\r\n\r\n');
        resolve({ head: all.subarray(0, end).toString('latin1'), bodyBytes: all.length - end - 4 });
      });
    });
    return { resume: () => socket.resume(), received };
  }

  it('leaves a connection whose ended answer is still being written to finish, and closes it once written', async () => {
    const reader = slowReader();
    await until(() => answer !== undefined && answer.finished);
    expect(answer!.writableFinished).toBe(false);
    closeIdleConnections(server, connections);
    expect([...connections].map((socket) => socket.destroyed)).toEqual([false]);
    answer!.once('finish', () => setImmediate(() => closeIdleConnections(server, connections)));
    reader.resume();
    const { head, bodyBytes } = await reader.received;
    expect(head).toMatch(new RegExp(`^HTTP/1\\.1 200 OK\\r\\n[\\s\\S]*Content-Length: ${BODY_BYTES}`));
    expect(bodyBytes).toBe(BODY_BYTES);
    await until(() => connections.size === 0);
  });

  it("is needed: Node's own closeIdleConnections cuts such an answer off", async () => {
    const reader = slowReader();
    await until(() => answer !== undefined && answer.finished);
    expect(answer!.writableFinished).toBe(false);
    server.closeIdleConnections();
    reader.resume();
    expect((await reader.received).bodyBytes).toBeLessThan(BODY_BYTES);
  });

  it('closes a kept-alive connection with nothing in flight at once', async () => {
    const reader = slowReader();
    reader.resume();
    await until(() => answer !== undefined && answer.writableFinished);
    await until(() => [...connections].every((socket) => !(socket as Socket & { _httpMessage?: unknown })._httpMessage));
    closeIdleConnections(server, connections);
    const { bodyBytes } = await reader.received;
    expect(bodyBytes).toBe(BODY_BYTES);
    await until(() => connections.size === 0);
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
    closeConnectionsWithoutRequest(connections);
    expect(await Promise.all([silent.closed, partHead.closed])).toEqual([true, true]);
    expect(asking.socket.destroyed).toBe(false);
    answers[0].end('ok');
    const text = await new Promise<string>((resolve) => asking.socket.once('data', (chunk: Buffer) => resolve(chunk.toString('latin1'))));
    expect(text).toMatch(/^HTTP\/1\.1 200 OK\r\n[\s\S]*\r\n\r\nok$/);
  });
});
