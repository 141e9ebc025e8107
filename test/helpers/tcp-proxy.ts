import { connect, createServer, type Server, type Socket } from 'node:net';

/**
 * A TCP proxy of the tests' own between the service and PostgreSQL: it can cut every
 * connection (the database "goes away"), refuse new ones, come back, and delay what the
 * database sends (a slow query), hold it back (a server that hangs), or lose it on the way.
 */
export class TcpProxy {
  private server: Server | null = null;
  private readonly sockets = new Set<Socket>();
  private readonly timers = new Set<NodeJS.Timeout>();
  private readonly holdListeners = new Set<() => void>();
  /** While set, what the server sends is queued per connection, in order, until release(). */
  private held: { client: Socket; chunk: Buffer }[] | null = null;
  delayMs = 0;
  /** While set, what the server sends is thrown away, the connections kept open: bytes lost on the way. */
  dropping = false;

  constructor(
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  async start(): Promise<void> {
    if (this.server) return;
    this.server = createServer((client) => {
      const upstream = connect(this.target.port, this.target.host);
      for (const s of [client, upstream]) {
        this.sockets.add(s);
        s.on('close', () => this.sockets.delete(s));
        s.on('error', () => s.destroy());
      }
      client.on('data', (chunk: Buffer) => upstream.write(chunk));
      upstream.on('data', (chunk: Buffer) => {
        if (this.dropping) return;
        if (this.held) return void this.held.push({ client, chunk });
        if (this.delayMs === 0) return void client.write(chunk);
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          client.write(chunk);
        }, this.delayMs);
        this.timers.add(timer);
        for (const listener of [...this.holdListeners]) listener();
      });
      client.on('close', () => upstream.destroy());
      upstream.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      this.server!.once('error', reject);
      this.server!.listen(this.port, '127.0.0.1', () => resolve());
    });
  }

  /**
   * Resolves when the proxy next holds back an answer of the database (with `delayMs` set):
   * a query of the service is then in flight.
   */
  answerHeldBack(): Promise<void> {
    return new Promise((done) => {
      const listener = (): void => {
        this.holdListeners.delete(listener);
        done();
      };
      this.holdListeners.add(listener);
    });
  }

  /** The server stops answering (as one that hangs): what it sends is held back, in order. */
  hold(): void {
    this.held ??= [];
  }

  /** Sends what was held back, in the order the server sent it, and passes answers on again. */
  release(): void {
    const held = this.held ?? [];
    this.held = null;
    for (const { client, chunk } of held) if (!client.destroyed) client.write(chunk);
  }

  /** Drops every connection and refuses new ones. */
  async cut(): Promise<void> {
    const server = this.server;
    this.server = null;
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.held = null;
    for (const s of this.sockets) s.destroy();
    if (server) await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  async restore(): Promise<void> {
    await this.start();
  }

  async stop(): Promise<void> {
    await this.cut();
  }
}
