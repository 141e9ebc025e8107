import { once } from 'node:events';
import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createConnection, type AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { createRootLogger, requestLogger } from './request-logging.js';

/** A server whose every request passes the request logger, then `handle`; the lines it logs. */
async function serve(level: string, handle: (res: ServerResponse) => void): Promise<{ server: Server; url: string; lines: Record<string, unknown>[] }> {
  const lines: Record<string, unknown>[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  const log = requestLogger(pino({ level }, sink));
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    (res as ServerResponse & { locals: object }).locals = { clientId: 'svc_abc' };
    log(req, res, () => handle(res));
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return { server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, lines };
}

const until = async (check: () => boolean): Promise<void> => {
  while (!check()) await new Promise((done) => setTimeout(done, 5));
};

describe('requestLogger', () => {
  it('writes one line per response with the request id it echoes', async () => {
    const { server, url, lines } = await serve('info', (res) => res.end('ok'));
    try {
      const given = await fetch(`${url}/a?b=1`, { headers: { 'x-request-id': 'partner-1' } });
      const generated = await fetch(`${url}/c`, { headers: { 'x-request-id': 'not a token!' } });
      const key = await fetch(`${url}/d`, { headers: { 'x-request-id': 'svck_Z8F3L8-5mr3BjpnSIa8X-SLJSOXLOxAW89tRog-8sjY' } });
      expect(given.headers.get('x-request-id')).toBe('partner-1');
      expect(generated.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      // An API key (or a token) sent as the request id is neither echoed nor logged.
      expect(key.headers.get('x-request-id')).toMatch(/^[0-9a-f-]{36}$/);
      await until(() => lines.length === 3);
      expect(JSON.stringify(lines)).not.toContain('svck_');
      expect(lines[0]).toMatchObject({ level: 30, msg: 'request completed', clientId: 'svc_abc', req: { id: 'partner-1', method: 'GET', url: '/a?b=1' }, res: { statusCode: 200 } });
      expect(typeof lines[0].responseTime).toBe('number');
      expect((lines[1].req as { id: string }).id).toBe(generated.headers.get('x-request-id'));
    } finally {
      server.close();
    }
  });

  it('logs a 5xx at error level, a 503 (unavailable for now: a database away, a replica not ready) at warn, and nothing below the level', async () => {
    const { server, url, lines } = await serve('warn', (res) => {
      res.statusCode = res.req.url === '/fail' ? 500 : res.req.url === '/busy' ? 503 : 200;
      res.end();
    });
    try {
      expect((await fetch(`${url}/fine`)).status).toBe(200);
      expect((await fetch(`${url}/fail`)).status).toBe(500);
      expect((await fetch(`${url}/busy`)).status).toBe(503);
      await until(() => lines.length === 2);
      await new Promise((done) => setTimeout(done, 20));
      expect(lines).toHaveLength(2);
      expect(lines[0]).toMatchObject({ level: 50, msg: 'request completed', res: { statusCode: 500 }, req: { url: '/fail' } });
      expect(lines[1]).toMatchObject({ level: 40, msg: 'request completed', res: { statusCode: 503 }, req: { url: '/busy' } });
    } finally {
      server.close();
    }
  });

  it('logs a response the client walked away from as aborted: a warning without a stack', async () => {
    const { server, url, lines } = await serve('info', (res) => res.write('partial'));
    try {
      const req = request(`${url}/slow`);
      req.on('error', () => undefined);
      req.on('response', (res) => res.once('data', () => req.destroy()));
      req.end();
      await until(() => lines.length === 1);
      expect(lines[0]).toMatchObject({ level: 40, msg: 'request aborted: the connection closed before the response was complete', req: { url: '/slow' }, aborted: true });
      expect(lines[0]).not.toHaveProperty('err');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('logs no status for a request cut off before its answer began (an upload whose body never came whole): none was sent', async () => {
    const { server, url, lines } = await serve('info', () => undefined);
    try {
      const port = Number(new URL(url).port);
      const upload = createConnection(port, '127.0.0.1', () => upload.write('POST /menus/dishes HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\nabc'));
      await new Promise((done) => setTimeout(done, 50));
      upload.destroy();
      await until(() => lines.length === 1);
      expect(lines[0]).toMatchObject({ level: 40, msg: 'request aborted: the connection closed before the response was complete', req: { url: '/menus/dishes' }, res: { statusCode: null }, aborted: true });
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });

  it('logs a response ended whole by the service but not taken whole by the connection as aborted, and a taken one as completed', async () => {
    // Larger than what the loopback socket's buffers hold: the client's reading decides.
    const body = Buffer.alloc(16 * 1024 * 1024, 0x61);
    const { server, url, lines } = await serve('info', (res) => res.end(body));
    try {
      const port = Number(new URL(url).port);
      const cut = createConnection(port, '127.0.0.1', () => cut.write('GET /page HTTP/1.1\r\nHost: x\r\n\r\n'));
      cut.once('data', () => {
        cut.pause();
        cut.destroy();
      });
      await until(() => lines.length === 1);
      expect(lines[0]).toMatchObject({ level: 40, msg: 'request aborted: the connection closed before the response was complete', req: { url: '/page' }, aborted: true });
      const taken = await fetch(`${url}/whole`);
      expect((await taken.arrayBuffer()).byteLength).toBe(body.length);
      await until(() => lines.length === 2);
      expect(lines[1]).toMatchObject({ level: 30, msg: 'request completed', req: { url: '/whole' }, res: { statusCode: 200 } });
      expect(lines[1]).not.toHaveProperty('aborted');
    } finally {
      server.closeAllConnections();
      server.close();
    }
  });
});

describe('createRootLogger', () => {
  it("leaves out a failed statement's values from the error's line, keeping the statement, and credentials anywhere", () => {
    const lines: Record<string, unknown>[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(JSON.parse(chunk.toString()) as Record<string, unknown>);
        done();
      },
    });
    // What TypeORM throws for a failed statement: the statement, its values, and the driver's error with them too.
    const failed = Object.assign(new Error('duplicate key value violates unique constraint'), {
      query: 'INSERT INTO "dish_images"("id", "data") VALUES ($1, $2)',
      parameters: ['f3b0', Buffer.from('the image bytes')],
      // PostgreSQL's DETAIL, which TypeORM's error copies from the driver's.
      detail: 'Failing row contains (f3b0, partner row text).',
      constraint: 'dish_images_pkey',
      driverError: Object.assign(new Error('duplicate key'), { parameters: ['f3b0', 'partner text'], detail: 'Key (id)=(partner key text) already exists.' }),
    });
    createRootLogger({ LOG_LEVEL: 'info' }, sink).error({ err: failed, clientSecret: 's3cret' }, 'request failed');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      msg: 'request failed',
      clientSecret: '[redacted]',
      err: {
        message: 'duplicate key value violates unique constraint',
        query: failed.query,
        parameters: '[redacted]',
        detail: '[redacted]',
        constraint: 'dish_images_pkey',
        driverError: { parameters: '[redacted]', detail: '[redacted]' },
      },
    });
    expect(JSON.stringify(lines[0])).not.toMatch(/partner|image bytes|s3cret/);
  });
});
