import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cliJson, startCli } from '../helpers/cli.js';
import { freePort } from '../helpers/listen.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { isolatedConfig } from '../helpers/test-config.js';

const PG = new URL(process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test');

/**
 * A Job's pod stopped while `visits import` is still starting (connecting to a slow database):
 * the import stops before its first batch with its report and exit 2, as it does later on,
 * instead of ending by the signal with no word.
 */
describe('visits import asked to stop while it starts (postgres, a slow database through a TCP proxy)', () => {
  const { env, drop } = isolatedConfig();
  let proxy: TcpProxy;

  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme'], env);
    proxy = new TcpProxy({ host: PG.hostname, port: Number(PG.port || 5432) }, await freePort());
    await proxy.start();
  });
  afterAll(async () => {
    await proxy.stop();
    await drop();
  });

  it('stops before the first batch, says nothing was written, and exits 2', async () => {
    const path = join(env.DATA_DIR, 'one.ndjson');
    writeFileSync(path, '{"visitId": 1}\n');
    const viaProxy = new URL(env.DATABASE_URL);
    viaProxy.port = String(proxy.port);
    // Every answer of the database is held back: the command is still starting (its boot waits for them) when the signal comes.
    proxy.delayMs = 300;
    const held = proxy.answerHeldBack();
    const { child, result } = startCli(['--json', 'visits', 'import', path], { ...env, DATABASE_URL: viaProxy.toString() });
    await held;
    child.kill('SIGTERM');
    const ended = await result;
    expect({ code: ended.code, signal: ended.signal }).toEqual({ code: 2, signal: null });
    const error = 'the import stopped at line 1 (the process received SIGTERM); nothing of the file was written. Importing it again is safe.';
    expect(JSON.parse(ended.stdout)).toEqual({ error, file: path, imported: 0, rejected: [], stoppedAtLine: 1 });
    expect(ended.stderr).toBe(`SIGTERM: stopping once the batch being written is committed; a second signal stops at once, rolling it back.\nerror: ${error}\n`);
  }, 120_000);
});
