import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';

/** One request a receiver got. */
export interface Received {
  path: string;
  headers: IncomingHttpHeaders;
  /** The body exactly as sent. */
  raw: string;
  json: { id: string; type: string; created: string; data: Record<string, unknown> };
  /** When it arrived (ms since the epoch). */
  at: number;
  /** Requests to the same path open at that moment, this one included. */
  openOnPath: number;
}

/**
 * How the receiver answers a request: a status (and body, after `delayMs`), `hang` (never
 * answers until stopped), or `stream` (200 and a body without end).
 */
/**
 * `hang`: no answer; `stream`: 500 and a body without end; `open` on an answer: its status and
 * body are sent and the body is never ended.
 */
export type Answer = { status: number; headers?: Record<string, string>; body?: string; delayMs?: number; open?: boolean } | 'hang' | 'stream';

/**
 * A webhook receiver on loopback, as a partner would run one: records every request and
 * answers as `answer` says (200 by default). It can stop (connections refused) and start
 * again on the same port.
 */
export class WebhookReceiver {
  readonly received: Received[] = [];
  /** Answers per request; the default answers 200. */
  answer: (req: Received, index: number) => Answer = () => ({ status: 200 });
  /** Streamed answers that the sender closed before their end. */
  closedStreams = 0;
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly open = new Map<string, number>();
  port = 0;

  /** Requests to `path` not answered yet (nor dropped). */
  openOn(path: string): number {
    return this.open.get(path) ?? 0;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }

  async start(): Promise<this> {
    const server = createServer((req, res) => this.handle(req, res));
    server.on('connection', (socket) => {
      this.sockets.add(socket);
      socket.on('close', () => this.sockets.delete(socket));
    });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(this.port, '127.0.0.1', () => resolve());
    });
    const address = server.address();
    this.port = typeof address === 'object' && address ? address.port : 0;
    this.server = server;
    return this;
  }

  /** Stops listening and drops every connection, answered or not. */
  async stop(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const socket of this.sockets) socket.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const chunks: Buffer[] = [];
    const path = req.url ?? '';
    this.open.set(path, this.openOn(path) + 1);
    res.once('close', () => this.open.set(path, this.openOn(path) - 1));
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.once('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      let json: Received['json'];
      try {
        json = JSON.parse(raw) as Received['json'];
      } catch {
        json = { id: '', type: '', created: '', data: {} };
      }
      const received: Received = { path, headers: req.headers, raw, json, at: Date.now(), openOnPath: this.openOn(path) };
      this.received.push(received);
      this.reply(res, this.answer(received, this.received.length - 1));
    });
  }

  private reply(res: ServerResponse, answer: Answer): void {
    if (answer === 'hang') return;
    if (answer === 'stream') {
      // A refusal with a body without end: the sender must stop reading by itself.
      res.writeHead(500, { 'content-type': 'text/plain' });
      const chunk = 'x'.repeat(16 * 1024);
      const write = (): void => {
        while (!res.destroyed && res.write(chunk));
        if (!res.destroyed) res.once('drain', write);
      };
      res.once('close', () => {
        if (!res.writableFinished) this.closedStreams++;
      });
      write();
      return;
    }
    const send = (): void => {
      res.writeHead(answer.status, { 'content-type': 'text/plain', ...answer.headers });
      if (answer.open) res.write(answer.body ?? '');
      else res.end(answer.body ?? '');
    };
    if (answer.delayMs) setTimeout(send, answer.delayMs);
    else send();
  }
}
