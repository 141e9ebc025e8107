import { createServer, type Server } from 'node:http';
import { connect, type AddressInfo } from 'node:net';
import { eventually } from '../../test/helpers/eventually.js';
import { whenEnded } from './response-gone.js';

/** More than the loopback connection's buffers hold on both sides: cut off by a client that stops reading, it cannot have been handed over whole. */
const BIG = Buffer.alloc(64 * 1024 * 1024, 97);

describe('whenEnded', () => {
  let server: Server;
  let port: number;
  const seen: Array<[string, boolean]> = [];
  const again: Array<[string, boolean]> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      whenEnded(res, (whole) => seen.push([req.url ?? '', whole]));
      // Asked again for the same response (as its log line and its metrics do): the same verdict.
      whenEnded(res, (whole) => again.push([req.url ?? '', whole]));
      if (req.url === '/big') res.end(BIG);
      else res.end('ok');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** Sends `raw` on one connection; the client goes away once it has read `readBytes`, or reads to the end. */
  const send = (raw: string, readBytes = Infinity): Promise<number> =>
    new Promise((resolve) => {
      let got = 0;
      const socket = connect(port, '127.0.0.1', () => socket.write(raw));
      socket.on('data', (chunk: Buffer) => {
        got += chunk.length;
        if (got >= readBytes) socket.destroy();
      });
      socket.on('close', () => resolve(got));
    });
  const head = (path: string, extra = ''): string => `GET ${path} HTTP/1.1\r\nHost: x\r\n${extra}\r\n`;
  /** Resolves once `count` responses were judged (or a minute has passed: the assertions then say what was). */
  const judged = (count: number): Promise<number> => eventually(() => Promise.resolve(seen.length), (n) => n >= count, 60_000, 10);

  it('says whole for pipelined responses the client read to the end', async () => {
    seen.length = 0;
    again.length = 0;
    await send(head('/a') + head('/big') + head('/b', 'Connection: close\r\n'));
    await judged(3);
    expect(seen).toEqual([['/a', true], ['/big', true], ['/b', true]]);
    expect(again).toEqual(seen);
  });

  it('says not whole for a pipelined response queued behind another and cut off in its body', async () => {
    seen.length = 0;
    again.length = 0;
    await send(head('/a') + head('/big'), 1_000_000);
    await judged(2);
    expect(seen).toEqual([['/a', true], ['/big', false]]);
    expect(again).toEqual(seen);
  });
});
