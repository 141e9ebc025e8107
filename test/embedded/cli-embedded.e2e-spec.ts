import { existsSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MAX_LINE_BYTES } from '../../src/common/record-file.js';
import { cli, cliJson, SPAWN_TIMEOUT_MS, spawnCli, spawnCliUnread } from '../helpers/cli.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * The operator CLI on the embedded database (no DATABASE_URL) and a DATA_DIR it has to make,
 * find empty or cannot use: what the commands say about the folder and the database file.
 * The commands run in this process (`cli`), which is on SQLite as they are. Then the built
 * binary itself: its help, output and exit codes, which no database decides (its stop on
 * SIGTERM between batches is tested on both, in test/cli.e2e-spec.ts).
 */
describe('operator CLI on the embedded database', () => {
  const { env, drop } = isolatedConfig();
  const base = mkdtempSync(join(tmpdir(), 'results-cli-embedded-'));
  const embedded = (dataDir: string): Record<string, string> => ({ ...env, DATABASE_URL: '', DATA_DIR: dataDir });
  afterAll(() => drop());

  it('makes and says the database of a DATA_DIR with none (a typo), then says nothing more', async () => {
    const elsewhere = join(base, 'typo');
    const fresh = await cli(['clients', 'list'], embedded(elsewhere));
    expect(fresh).toEqual({
      code: 0,
      stdout: '(no clients)\n',
      stderr: `note: there was no database at ${join(elsewhere, 'results.sqlite')}; a new, empty one was made (is DATA_DIR right?)\n`,
    });
    expect(await cli(['clients', 'list'], embedded(elsewhere))).toEqual({ code: 0, stdout: '(no clients)\n', stderr: '' });
  });

  it('checks migrations without making the database or its folder; the first run makes it without a word', async () => {
    const unchecked = join(base, 'unchecked');
    const noDatabase = join(unchecked, 'results.sqlite');
    expect(await cli(['migrations', 'check'], embedded(unchecked))).toEqual({
      code: 1,
      stdout: `migrations are pending: there is no database at ${noDatabase} yet (is DATA_DIR right? migrations run makes it)\n`,
      stderr: '',
    });
    const asJson = await cli(['--json', 'migrations', 'check'], embedded(unchecked));
    expect([asJson.code, JSON.parse(asJson.stdout)]).toEqual([1, { pendingMigrations: true, drift: [], databaseMissing: noDatabase }]);
    expect(existsSync(unchecked)).toBe(false);
    const firstRun = await cli(['migrations', 'run'], embedded(join(base, 'first')));
    expect({ code: firstRun.code, stderr: firstRun.stderr }).toEqual({ code: 0, stderr: '' });
    expect(existsSync(join(base, 'first', 'results.sqlite'))).toBe(true);
  });

  it('says a DATA_DIR it cannot use or make in one line with exit 2, without a stack, in JSON too', async () => {
    const aFile = join(base, 'not-a-folder');
    writeFileSync(aFile, 'a file where DATA_DIR should be a folder');
    const dataDirFile = await cli(['migrations', 'run'], embedded(aFile));
    expect(dataDirFile.code).toBe(2);
    expect(dataDirFile.stderr).toMatch(new RegExp(`^error: cannot use ${aFile.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: E[A-Z]+[^\n]*\n$`));
    const dataDir = join(aFile, 'data');
    const refusal = `cannot use ${dataDir}: ENOTDIR: not a directory, mkdir '${dataDir}'`;
    expect(await cli(['--json', 'clients', 'list'], embedded(dataDir))).toEqual({ code: 2, stdout: `${JSON.stringify({ error: refusal })}\n`, stderr: `error: ${refusal}\n` });
  });
});

describe('the built binary, node dist/cli.js', () => {
  const { env, drop } = isolatedConfig();
  const LIMIT = SPAWN_TIMEOUT_MS + 30_000;
  beforeAll(async () => {
    await cliJson(['migrations', 'run'], env);
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme Dining'], env);
    await cliJson(['clients', 'add', '--id', '1002', '--name', 'Other Group'], env);
  });
  afterAll(() => drop());

  it('prints the help and exits 0', async () => {
    const result = await spawnCli(['--help'], env);
    expect(result.code).toBe(0);
    expect(result.stdout).toMatch(/^Usage: results-cli \[options\] \[command\]/);
    expect(result.stdout).toContain('migrations');
  }, LIMIT);

  it('answers --json with the data of the configured database', async () => {
    const result = await spawnCli(['clients', 'list', '--json'], env);
    expect(result.code).toBe(0);
    const clients = JSON.parse(result.stdout) as { id: number; name: string }[];
    expect(clients.map((c) => c.id)).toEqual([1001, 1002]);
    expect(clients).toEqual(await cliJson(['clients', 'list'], env));
  }, LIMIT);

  it('ends with its own exit code and no stack when the reader closes its output early', async () => {
    expect(await spawnCliUnread(['clients', 'list', '--json'], env)).toEqual({ code: 0, stderr: '' });
    expect(await spawnCliUnread(['brands', 'add', '--client', '4242', '--id', '9', '--name', 'X'], env)).toEqual({
      code: 1,
      stderr: "error: client 4242 does not exist; add it with 'clients add'\n",
    });
  }, LIMIT);

  it("exits 1 with the message on stderr on an operator's mistake", async () => {
    const result = await spawnCli(['brands', 'add', '--client', '4242', '--id', '9', '--name', 'X'], env);
    expect(result).toEqual({ code: 1, stdout: '', stderr: "error: client 4242 does not exist; add it with 'clients add'\n" });
  }, LIMIT);

  it('refuses a CSV file with a record far over the limit in one line under the image\'s heap limit, instead of running out of memory', async () => {
    // The Dockerfile's NODE_OPTIONS: a 256 MB heap. Each character past the limit made the parser
    // report the record again, with a copy of it, until the heap ran out (exit 134, a V8 stack).
    const path = join(mkdtempSync(join(tmpdir(), 'results-cli-csv-')), 'branches.csv');
    writeFileSync(path, `id,name\nB-1,a\nB-2,"${'n'.repeat(MAX_LINE_BYTES + 4 * 1024 * 1024)}"\nB-3,b\n`);
    const result = await spawnCli(['branches', 'import', '--client', '1001', path], env, '--max-semi-space-size=4 --max-old-space-size=256');
    expect(result).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^error: .*branches\.csv: the record after line 2 is not valid CSV \(Max Record Size: [^\n]*\); the records after it cannot be told apart, so the file is refused whole and nothing of it was written\.\n$/),
    });
  }, LIMIT);
});
