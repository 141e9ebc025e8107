import { chmodSync, chownSync, mkdtempSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { cli } from '../helpers/cli.js';
import { startService } from '../helpers/service-process.js';

const { Client } = pg;

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** A regular file: a folder under it cannot be made by any process, root included. */
function aFile(): string {
  const file = join(mkdtempSync(join(tmpdir(), 'results-refusals-')), 'a-file');
  writeFileSync(file, 'not a folder');
  return file;
}

describe('a start whose settings name what cannot be used stops with exit 78 and one line naming the setting', () => {
  it('stops when DATA_DIR cannot be made, before the database is opened', async () => {
    const dataDir = join(aFile(), 'data');
    await expect(startService({ DATA_DIR: dataDir })).rejects.toThrow(
      new RegExp(`^service exited with 78:\nInvalid configuration:\n {2}- DATA_DIR: cannot use ${escaped(dataDir)}: ENOTDIR: [^\n]*\n$`),
    );
  });

  it('stops when the database file in DATA_DIR cannot be written, rather than be ready and fail every write', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
    const database = join(dataDir, 'results.sqlite');
    // A database made and migrated before: one that takes no write to start on.
    expect(await cli(['migrations', 'run'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' })).toMatchObject({ code: 0 });
    // A file of another user (root's, the service run as nobody), or one its owner may not write.
    const root = process.getuid?.() === 0;
    if (root) chownSync(dataDir, 65534, 65534);
    else chmodSync(database, 0o444);
    await expect(startService({ DATA_DIR: dataDir, SEED_DEMO: 'false' }, root ? { user: { uid: 65534, gid: 65534 } } : {})).rejects.toThrow(
      new RegExp(`^service exited with 78:\nInvalid configuration:\n {2}- DATA_DIR: cannot write ${escaped(database)}: EACCES: [^\n]*\n$`),
    );
  });

  it('stops with exit 69 and one line naming the file when the embedded database file is damaged, rather than a stack', async () => {
    for (const [what, damage] of [
      ['its header overwritten', (file: string) => writeFileSync(file, Buffer.alloc(100, 7), { flag: 'r+' })],
      ['cut to half', (file: string) => truncateSync(file, Math.floor(statSync(file).size / 2 / 4096) * 4096)],
    ] as const) {
      const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
      expect(await cli(['migrations', 'run'], { DATA_DIR: dataDir, LOG_LEVEL: 'silent' })).toMatchObject({ code: 0 });
      damage(join(dataDir, 'results.sqlite'));
      const refused = await startService({ DATA_DIR: dataDir, SEED_DEMO: 'false' }).then(
        () => 'started',
        (error: Error) => error.message,
      );
      expect([what, refused]).toEqual([
        what,
        expect.stringMatching(
          /^service exited with 69:\nresults-service cannot start: the embedded database file \(results\.sqlite in DATA_DIR\) is damaged \((file is not a database|database disk image is malformed)\): restore it from a backup \(README, "Key rotation and backup"\)\n$/,
        ),
      ]);
    }
  });

  it('stops when the folder of IMAGE_STORAGE=filesystem cannot be made, rather than be ready and fail every upload', async () => {
    const folder = join(aFile(), 'img');
    const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
    await expect(startService({ DATA_DIR: dataDir, IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: folder })).rejects.toThrow(
      new RegExp(`^service exited with 78:\nInvalid configuration:\n {2}- IMAGE_STORAGE_DIR: cannot use ${escaped(folder)}: ENOTDIR: [^\n]*\n$`),
    );
  });

  it('stops on a damaged PKCS#8 signing key, without a stack', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
    const damaged = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
    const refusal = startService({ DATA_DIR: dataDir, SEED_DEMO: 'false', LOG_LEVEL: 'warn', JWT_SIGNING_KEYS: damaged });
    await expect(refusal).rejects.toThrow(
      /^service exited with 78:\n(.*\n)*Invalid configuration:\n {2}- JWT_SIGNING_KEYS: its key cannot be read as a PKCS#8 private key \([^\n]+\)\n$/,
    );
    await expect(refusal).rejects.not.toThrow(/\n {4}at /);
  });

  it('stops when API_KEY_HASH_KEY opens none of the signing keys the database keeps: it could sign no token', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
    const settings = { DATA_DIR: dataDir, SEED_DEMO: 'false', API_KEY_HASH_KEY: 'the value the keys were stored under' };
    // The first start makes the ring's first key, sealed under its value.
    await (await startService(settings)).stop();
    const refusal = startService({ ...settings, API_KEY_HASH_KEY: 'another value altogether', LOG_LEVEL: 'warn' });
    // The keyring's own log line of the key (JSON, on stdout) may come before or after the
    // refusal (stderr): the two streams reach the test in no set order.
    await expect(refusal).rejects.toThrow(
      /^service exited with 78:\n(.*\n)*Invalid configuration:\n {2}- API_KEY_HASH_KEY: signing key \S+ cannot be decrypted with this API_KEY_HASH_KEY \(stored under another value\): set the value the database's keys, API keys and secrets were stored under\n(\{.*\}\n)*$/,
    );
    await expect(refusal).rejects.not.toThrow(/\n {4}at /);
    // With its own value it starts again.
    await (await startService(settings)).stop();
  });
});

describe('a start whose database is out of reach', () => {
  it('stops with exit 69 and one line, without a stack or a word of retrying', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    // A port nothing listens on: the listener is closed again before the start.
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const refusal = startService({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test`, LOG_LEVEL: 'info' });
    await expect(refusal).rejects.toThrow(
      new RegExp(`^service exited with 69:\n(.*\n)*results-service cannot start: the database cannot be used: connect ECONNREFUSED 127\\.0\\.0\\.1:${port}\n$`),
    );
    await expect(refusal).rejects.not.toThrow(/\n {4}at |Retrying/);
  });

  it('stops the same way when the database stops answering after the migrations, while the application starts', async () => {
    // A proxy to PostgreSQL that forwards the first connection (the migrations') and then takes
    // connections without ever answering them, as a server that hangs mid-start does.
    let forwarded = false;
    const held: Socket[] = [];
    const proxy = createServer((client) => {
      client.on('error', () => undefined);
      if (forwarded) {
        held.push(client);
        return;
      }
      forwarded = true;
      const server = connect(5432, '127.0.0.1');
      server.on('error', () => client.destroy());
      client.pipe(server).pipe(client);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    const { port } = proxy.address() as AddressInfo;
    const schema = `start_hang_${process.pid}`;
    try {
      const refusal = startService({ DATABASE_URL: `postgres://postgres@127.0.0.1:${port}/test`, DATABASE_SCHEMA: schema, LOG_LEVEL: 'info', SEED_DEMO: 'false' });
      await expect(refusal).rejects.toThrow(/^service exited with 69:\n(.*\n)*results-service cannot start: the database cannot be used: [^\n]*timeout[^\n]*\n$/);
      await expect(refusal).rejects.not.toThrow(/\n {4}at |ExceptionHandler/);
    } finally {
      for (const socket of held) socket.destroy();
      proxy.close();
      const cleanup = new Client({ host: '127.0.0.1', port: 5432, user: 'postgres', database: 'test' });
      await cleanup.connect();
      await cleanup.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await cleanup.end();
    }
  });

  it("stops with exit 69 and one line when the database's stored check of API_KEY_HASH_KEY cannot be read, rather than serve without knowing it", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
    const settings = { DATA_DIR: dataDir, SEED_DEMO: 'false' };
    await (await startService(settings)).stop();
    // A statement the database refuses on the check's table (here a column renamed under it).
    const alter = (from: string, to: string): void => {
      const db = new Database(join(dataDir, 'results.sqlite'));
      db.exec(`ALTER TABLE setting_checks RENAME COLUMN ${from} TO ${to}`);
      db.close();
    };
    alter('value', 'renamed');
    const refusal = startService({ ...settings, LOG_LEVEL: 'warn' });
    // JSON log lines (stdout) may come after the refusal (stderr): the two streams reach the test in no set order.
    await expect(refusal).rejects.toThrow(
      /^service exited with 69:\n(.*\n)*results-service cannot start: the database cannot be used: the stored check of API_KEY_HASH_KEY cannot be read \([^\n]*no such column[^\n]*\); without it a start with another value than the one the database's keys were stored under would serve, refusing every API key\n(\{.*\}\n)*$/,
    );
    await expect(refusal).rejects.not.toThrow(/\n {4}at /);
    // Readable again, the start serves.
    alter('renamed', 'value');
    await (await startService(settings)).stop();
  });

  it('stops with exit 69 and one line when its port is taken, naming the address', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const dataDir = mkdtempSync(join(tmpdir(), 'results-refusals-'));
      const refusal = startService({ DATA_DIR: dataDir, SEED_DEMO: 'false', HOST: '127.0.0.1', PORT: String(port) });
      await expect(refusal).rejects.toThrow(new RegExp(`^service exited with 69:\n(.*\n)*results-service cannot start: cannot listen: listen EADDRINUSE: address already in use 127\\.0\\.0\\.1:${port}\n`));
      // No stack, and the one line only: not Nest's error line of the same failure beside it.
      await expect(refusal).rejects.not.toThrow(/\n {4}at |EADDRINUSE[^]*EADDRINUSE/);
    } finally {
      taken.close();
    }
  });
});
