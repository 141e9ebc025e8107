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
  private readonly holdListeners = new Set<{ queries: boolean; heard: () => void }>();
  /** The connections whose server has said ReadyForQuery: their startup (and its connect timeout) is over. */
  private readonly started = new WeakSet<Socket>();
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
        const startedBefore = this.started.has(client);
        if (endsReady(chunk)) this.started.add(client);
        if (this.dropping) return;
        if (this.held) return void this.held.push({ client, chunk });
        if (this.delayMs === 0) return void client.write(chunk);
        const timer = setTimeout(() => {
          this.timers.delete(timer);
          client.write(chunk);
        }, this.delayMs);
        this.timers.add(timer);
        for (const listener of [...this.holdListeners]) if (startedBefore || !listener.queries) listener.heard();
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
   * something of the service waits on the database. `queries`: only an answer on a connection
   * whose startup was over, that is to a query (a connection's startup answer held back ends
   * at the driver's connect timeout, a query's at the statement's).
   */
  answerHeldBack(options: { queries?: boolean } = {}): Promise<void> {
    return new Promise((done) => {
      const listener = {
        queries: options.queries ?? false,
        heard: (): void => {
          this.holdListeners.delete(listener);
          done();
        },
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

/** Whether a chunk of the server's ends with ReadyForQuery ('Z', length 5, a status byte): the end of a startup or of a query's answer. */
function endsReady(chunk: Buffer): boolean {
  return chunk.length >= 6 && chunk[chunk.length - 6] === 0x5a && chunk.readInt32BE(chunk.length - 5) === 5;
}
