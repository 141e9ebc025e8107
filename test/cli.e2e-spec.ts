import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import sharp from 'sharp';
import { DataSource } from 'typeorm';
import { dataSourceOptions } from '../src/database/data-source-options.js';
import { cli, cliJson, SPAWN_TIMEOUT_MS, spawnCli, startCli } from './helpers/cli.js';
import { isolatedConfig } from './helpers/test-config.js';

const files = mkdtempSync(join(tmpdir(), 'cli-files-'));
function file(name: string, text: string | Buffer): string {
  const path = join(files, name);
  writeFileSync(path, text);
  return path;
}

function visit(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    visitId: 9001,
    clientId: 1001,
    clientName: 'Acme Dining',
    brandId: 5,
    brandName: 'Acme Grill',
    branchId: 'BR-1',
    branchCode: 'LDS-01',
    branchName: 'Leeds',
    visitType: 'MV',
    questionnaireType: 'Mystery Visit - Dinner',
    visitScore: 81.5,
    recommendScore: 9,
    recommendComment: 'Lovely evening.',
    visitDateTime: '2026-11-01T19:30:00',
    modificationDate: '2026-11-02T08:00:00',
    visitSource: 'Mystery Guest',
    sections: [
      {
        name: 'Food Quality',
        score: 90,
        questions: [
          { subject: 'Was the steak cooked as ordered?', score: 10, analysisTag: 'FOOD_COOK', category: 'Food', dish: 'Ribeye', answer: 'Yes' },
        ],
      },
    ],
    guestId: null,
    optIns: null,
    completedAt: '2026-11-01T22:00:00Z',
    ...overrides,
  };
}

describe(`operator CLI (${process.env.TEST_DATABASE})`, () => {
  const { config, env, drop } = isolatedConfig();
  let db: DataSource;

  beforeAll(async () => {
    const migrated = await cliJson<{ applied: string[] }>(['migrations', 'run'], env);
    expect(migrated.applied.length).toBeGreaterThan(0);
    db = await new DataSource(dataSourceOptions(config)).initialize();
  });
  afterAll(async () => {
    await db.destroy();
    await drop();
  });

  const count = async (table: string): Promise<number> =>
    Number((await db.query<{ n: string | number }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);

  it('prints help for every command', async () => {
    const commands = [
      [], ['clients', 'add'], ['clients', 'list'], ['brands', 'add'], ['branches', 'import'], ['visits', 'import'],
      ['menus', 'import'], ['credentials', 'add'], ['credentials', 'list'], ['credentials', 'disable'], ['credentials', 'enable'],
      ['credentials', 'update'], ['credentials', 'rotate-secret'],
      ['keys', 'add'], ['keys', 'revoke'], ['signing-keys', 'list'], ['signing-keys', 'rotate'], ['signing-keys', 'retire'],
      ['demo'], ['migrations', 'run'], ['migrations', 'check'], ['migrations', 'generate'], ['images', 'sweep'],
    ];
    for (const command of commands) {
      const result = await cli([...command, '--help'], env);
      expect({ command, code: result.code, stderr: result.stderr }).toEqual({ command, code: 0, stderr: '' });
      expect(result.stdout).toMatch(new RegExp(`^Usage: results-cli ${command.join(' ')}`));
      // Every command takes --json: its help says so, not the top level's alone.
      expect({ command, json: /^\s+--json\s+machine-readable JSON output$/m.test(result.stdout) }).toEqual({ command, json: true });
    }
    const groups = await cli(['--help'], env);
    for (const group of ['clients', 'brands', 'branches', 'visits', 'menus', 'credentials', 'keys', 'signing-keys', 'demo', 'migrations']) {
      expect(groups.stdout).toMatch(new RegExp(`^  ${group} `, 'm'));
    }
  });

  it('answers usage errors with the message and the help on stderr, and no command with the help', async () => {
    const unknown = await cli(['clients', 'remove'], env);
    expect(unknown).toEqual({ code: 1, stdout: '', stderr: expect.stringMatching(/^error: unknown command 'remove'\n\nUsage: results-cli clients /) });
    const none = await cli([], env);
    expect(none.code).toBe(1);
    expect(none.stdout).toBe('');
    expect(none.stderr).toMatch(/^Usage: results-cli \[options\] \[command\]/);
    const noneJson = await cli(['--json'], env);
    expect([noneJson.code, noneJson.stdout]).toEqual([1, '{"error":"a command is required (see --help)"}\n']);
  });

  it('keeps the output mode of each run to itself when runs overlap', async () => {
    const [json, text, failed] = await Promise.all([
      cli(['--json', 'clients', 'list'], env),
      cli(['clients', 'list'], env),
      cli(['--json', 'keys', 'revoke', 'svck_none'], env),
    ]);
    expect(json).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    expect(text).toEqual({ code: 0, stdout: '(no clients)\n', stderr: '' });
    expect(failed.code).toBe(1);
    expect(JSON.parse(failed.stdout)).toEqual({ error: "no API key has the prefix 'svck_none' (credentials list shows each key's 12-character prefix)" });
  });

  it('reports the schema as current after the migrations', async () => {
    expect(await cliJson(['migrations', 'check'], env)).toEqual({ pendingMigrations: false, drift: [] });
  });

  it('adds clients and brands, with JSON output', async () => {
    expect(await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme Dining'], env)).toEqual({ id: 1001, name: 'Acme Dining' });
    await cliJson(['clients', 'add', '--id', '1002', '--name', 'Other Group'], env);
    expect(await cliJson(['brands', 'add', '--client', '1001', '--id', '5', '--name', 'Acme Grill'], env)).toEqual({
      id: 5,
      clientId: 1001,
      name: 'Acme Grill',
    });
    expect(await cliJson(['clients', 'list'], env)).toEqual([
      { id: 1001, name: 'Acme Dining' },
      { id: 1002, name: 'Other Group' },
    ]);
  });

  it("shows a name's control characters as escapes in its text output, so a name cannot forge a line or drive the terminal; JSON keeps it as given", async () => {
    // A backslash of the name is doubled, so that its escapes are told apart from the name's own text.
    const forged = 'Evil\n4245\tForged client\u001b[2J \\n';
    const added = await cli(['clients', 'add', '--id', '1002', '--name', forged], env);
    try {
      expect(added).toEqual({ code: 0, stdout: 'client 1002 Evil\\n4245\\tForged client\\u{1b}[2J \\\\n\n', stderr: '' });
      expect((await cli(['clients', 'list'], env)).stdout).toBe('1001\tAcme Dining\n1002\tEvil\\n4245\\tForged client\\u{1b}[2J \\\\n\n');
      expect(await cliJson(['clients', 'list'], env)).toEqual([
        { id: 1001, name: 'Acme Dining' },
        { id: 1002, name: forged },
      ]);
    } finally {
      await cliJson(['clients', 'add', '--id', '1002', '--name', 'Other Group'], env);
    }
  });

  it('refuses an option given twice, which would otherwise keep its last value alone (a credential of one client where two were meant)', async () => {
    const before = await cliJson<unknown[]>(['credentials', 'list'], env);
    const twice = await cli(['credentials', 'add', '--clients', '1001', '--clients', '1002', '--scopes', 'visits/standard.read'], env);
    expect(twice).toEqual({ code: 1, stdout: '', stderr: 'error: --clients is given more than once: give it once, with every value in it, comma-separated\n' });
    expect(await cliJson<unknown[]>(['credentials', 'list'], env)).toEqual(before);
    const renamed = await cli(['--json', 'clients', 'add', '--id', '1002', '--name', 'A', '--name', 'B'], env);
    expect([renamed.code, renamed.stdout]).toEqual([1, '{"error":"--name is given more than once: give it once"}\n']);
    expect(await cliJson(['clients', 'list'], env)).toEqual([
      { id: 1001, name: 'Acme Dining' },
      { id: 1002, name: 'Other Group' },
    ]);
  });

  it('refuses bad input with a clear message and a non-zero exit', async () => {
    const badId = await cli(['clients', 'add', '--id', 'abc', '--name', 'X'], env);
    expect(badId.code).toBe(1);
    expect(badId.stderr).toContain("--id must be an integer greater than 0: 'abc'");
    const missing = await cli(['clients', 'add', '--name', 'X'], env);
    expect(missing.code).not.toBe(0);
    expect(missing.stderr).toContain("required option '--id <id>' not specified");
    // With --json a usage error is said on stdout as well, as every other error.
    const usage = await cli(['--json', 'clients', 'add', '--name', 'X'], env);
    expect(usage.code).toBe(missing.code);
    expect(JSON.parse(usage.stdout)).toEqual({ error: "required option '--id <id>' not specified" });
    // A mistyped option is said as one, not as the required option it was meant to be.
    const typo = await cli(['--json', 'clients', 'add', '--id', '1003', '--nme', 'X'], env);
    expect([typo.code, JSON.parse(typo.stdout), typo.stderr]).toEqual([1, { error: "unknown option '--nme'\n(Did you mean --name?)" }, expect.stringMatching(/^error: unknown option '--nme'\n\(Did you mean --name\?\)\n/)]);
    const scope = await cli(['credentials', 'add', '--clients', '1001', '--scope', 'visits/standard.read'], env);
    expect([scope.code, scope.stderr]).toEqual([1, expect.stringMatching(/^error: unknown option '--scope'\n\(Did you mean --scopes\?\)\n/)]);
    const unknownCommand = await cli(['--json', 'nosuch'], env);
    expect(unknownCommand.code).not.toBe(0);
    expect(JSON.parse(unknownCommand.stdout)).toEqual({ error: expect.stringContaining("unknown command 'nosuch'") });
    const tooLarge = await cli(['--json', 'clients', 'add', '--id', '2147483648', '--name', 'X'], env);
    expect(tooLarge.code).toBe(1);
    expect(JSON.parse(tooLarge.stdout)).toEqual({ error: "--id must be at most 2147483647: '2147483648'" });
    const foreignBrand = await cli(['--json', 'brands', 'add', '--client', '1002', '--id', '5', '--name', 'Steal'], env);
    expect(foreignBrand.code).toBe(1);
    expect(JSON.parse(foreignBrand.stdout)).toEqual({ error: 'brand 5 belongs to client 1001, not 1002' });
    // Names are kept as given; blank, longer than 200 characters or holding NUL they are refused.
    const names: [string[], string][] = [
      [['clients', 'add', '--id', '4243', '--name', ' \t '], 'client name must not be blank'],
      [['clients', 'add', '--id', '4243', '--name', '\u{1F37D}'.repeat(201)], 'client name must be at most 200 characters: it has 201'],
      [['brands', 'add', '--client', '1001', '--id', '9', '--name', 'a\u0000b'], 'brand name must not contain NUL characters or unpaired UTF-16 surrogates'],
      // Bytes that are no UTF-8 on the command line, which Node reads as U+FFFD.
      [['clients', 'add', '--id', '4243', '--name', 'a\uFFFD'], "the argument 'a\uFFFD' is not UTF-8 text (U+FFFD stands where its bytes were not): give it in UTF-8"],
    ];
    for (const [args, error] of names) expect(JSON.parse((await cli(['--json', ...args], env)).stdout)).toEqual({ error });
    expect(await cliJson(['clients', 'add', '--id', '4243', '--name', ` ${'n'.repeat(198)} `], env)).toEqual({ id: 4243, name: ` ${'n'.repeat(198)} ` });
    await db.query('DELETE FROM clients WHERE id = 4243');
    const noClient = await cli(['brands', 'add', '--client', '4242', '--id', '9', '--name', 'X'], env);
    expect(noClient.stderr).toContain("client 4242 does not exist; add it with 'clients add'");
    // On the embedded database with a DATA_DIR that has none, or is no folder: test/embedded/cli-embedded.e2e-spec.ts.
    const badConfig = await cli(['clients', 'list'], { ...env, VISITS_TAKE_MAX: 'lots' });
    expect(badConfig.code).toBe(1);
    expect(badConfig.stderr).toContain('VISITS_TAKE_MAX="lots": expected an integer from 1 to 100000');
  });

  it('says in one line, without a stack, what is wrong with its environment', async () => {
    const noKeys = await cli(['clients', 'list'], { ...env, JWT_SIGNING_KEYS_FILE: '/nonexistent/keys.pem' });
    expect(noKeys.code).toBe(1);
    expect(noKeys.stderr).toMatch(/^error: Invalid configuration:\n {2}- JWT_SIGNING_KEYS_FILE: cannot read \/nonexistent\/keys\.pem: ENOENT[^\n]*\n$/);
    const noDatabase = await cli(['clients', 'list'], { ...env, DATABASE_URL: 'postgres://postgres@127.0.0.1:1/nothing' });
    expect(noDatabase.code).toBe(2);
    expect(noDatabase.stderr).toMatch(/^error: the database cannot be used: connect ECONNREFUSED 127\.0\.0\.1:1\n$/);
  });

  it('runs a short command beside a Redis that accepts and never answers: its answer, and nothing on stderr', async () => {
    // A server that accepts and never answers: the client is still connecting when the command is done.
    const sockets = new Set<Socket>();
    const silent = createServer((socket) => sockets.add(socket.on('error', () => undefined)));
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    try {
      const { port } = silent.address() as AddressInfo;
      const result = await cli(['clients', 'list', '--json'], { ...env, REDIS_URL: `redis://127.0.0.1:${port}` });
      expect([result.code, result.stderr]).toEqual([0, '']);
      expect(JSON.parse(result.stdout)).toEqual(expect.any(Array));
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => silent.close(resolve));
    }
  });

  it('imports branches from CSV, reporting bad rows by line and importing the rest', async () => {
    const path = file('branches.csv', 'id,name,branchCode,brandId\nBR-1,Leeds,LDS-01,5\nBR-2,York,,\nBR-3,,X,5\nBR-4,Hull,HUL,77\n');
    const result = await cli(['--json', 'branches', 'import', '--client', '1001', path], env);
    expect(result.code).toBe(1);
    expect(JSON.parse(result.stdout)).toEqual({
      file: path,
      imported: 2,
      rejected: [
        { line: 4, errors: ["'name' must not be empty."] },
        { line: 5, errors: ["'brandId' 77 is not a brand of client 1001."] },
      ],
    });
    const rows = await db.query('SELECT id, name, branch_code AS code, brand_id AS brand FROM branches ORDER BY id');
    expect(rows).toEqual([
      { id: 'BR-1', name: 'Leeds', code: 'LDS-01', brand: 5 },
      { id: 'BR-2', name: 'York', code: null, brand: null },
    ]);
  });

  it('refuses each visit record of a CSV file, which cannot hold its sections, saying so and writing nothing', async () => {
    const path = file('visits.csv', 'visitId,clientId,branchId,visitType,questionnaireType,visitScore,visitDateTime,sections\n9301,1001,BR-1,MV,Dinner,80,2026-11-01T19:30:00,[]\n9302,1001,BR-1,MV,Dinner,80,2026-11-01T19:30:00,\n');
    const result = await cli(['--json', 'visits', 'import', path], env);
    expect([result.code, JSON.parse(result.stdout)]).toEqual([
      1,
      { file: path, imported: 0, rejected: [2, 3].map((line) => ({ line, errors: ["'sections' cannot be written in CSV, which has no nesting: import visits as NDJSON or a JSON array."] })) },
    ]);
    expect(await db.query('SELECT id FROM visits WHERE id IN (9301, 9302)')).toEqual([]);
  });

  it('refuses a CSV record of the wrong number of cells by its line and imports the rest; a CSV whose structure breaks is refused whole, nothing written', async () => {
    const cells = file('cells.csv', 'id,name\nBR-C1,One\nBR-C2,Two,EXTRA\nBR-C3,Three\n');
    const result = await cli(['--json', 'branches', 'import', '--client', '1001', cells], env);
    expect([result.code, result.stderr]).toEqual([1, '']);
    expect(JSON.parse(result.stdout)).toEqual({ file: cells, imported: 2, rejected: [{ line: 3, errors: ['not valid CSV: the record has 3 cells, the header names 2 columns'] }] });
    const quote = file('quote.csv', 'id,name\nBR-Q1,One\nBR-Q2,"Two"x\nBR-Q3,Three\n');
    const refused = await cli(['--json', 'branches', 'import', '--client', '1001', quote], env);
    expect(refused.code).toBe(1);
    expect(JSON.parse(refused.stdout)).toEqual({
      error: `${quote}: the record after line 2 is not valid CSV (Invalid Closing Quote: got "x" at line 3 instead of delimiter, record delimiter, trimable character (if activated) or comment); the records after it cannot be told apart, so the file is refused whole and nothing of it was written.`,
    });
    expect(await db.query("SELECT id FROM branches WHERE id LIKE 'BR-C%' OR id LIKE 'BR-Q%' ORDER BY id")).toEqual([{ id: 'BR-C1' }, { id: 'BR-C3' }]);
    await db.query("DELETE FROM branches WHERE id IN ('BR-C1', 'BR-C3')");
  });

  it('refuses what no column keeps as given (NUL, an id past int4, a number for a text id) by line, on either database, and keeps CSV cells untrimmed', async () => {
    const nul = await cli(
      ['--json', 'branches', 'import', '--client', '1001', file('nul.json', '[{"id":"BR-N","name":"ok"},{"id":"a\\u0000b","name":"x"},{"id":1.5,"name":"n"}]')],
      env,
    );
    expect([nul.code, nul.stderr]).toEqual([1, '']);
    expect(JSON.parse(nul.stdout)).toMatchObject({
      imported: 1,
      rejected: [
        { line: 1, errors: ["'id' must not contain NUL characters or unpaired UTF-16 surrogates."] },
        { line: 1, errors: ["'id' must be a string."] },
      ],
    });
    const csv = await cli(['--json', 'branches', 'import', '--client', '1001', file('spaces.csv', 'id, name ,branchCode\nBR-S,  Leeds  ,\tLDS\u00a0\n')], env);
    expect(csv.code).toBe(0);
    expect(await db.query("SELECT name, branch_code AS code FROM branches WHERE id IN ('BR-N', 'BR-S') ORDER BY id")).toEqual([
      { name: 'ok', code: null },
      { name: '  Leeds  ', code: '\tLDS\u00a0' },
    ]);
    const menu = await cli(['--json', 'menus', 'import', '--client', '1001', file('big-menu.json', '[{"id":3000000000,"name":"big","startDate":"2026-01-01"}]')], env);
    expect([menu.code, JSON.parse(menu.stdout).rejected]).toEqual([1, [{ line: 1, element: 1, errors: ["'id' must be less than or equal to '2147483647'."] }]]);
    const visits = [JSON.stringify(visit({ visitId: 9101 })), JSON.stringify(visit({ visitId: 9102, brandId: 3000000000 }))];
    const big = await cli(['--json', 'visits', 'import', file('big-brand.ndjson', visits.join('\n'))], env);
    expect([big.code, big.stderr]).toEqual([1, '']);
    expect(JSON.parse(big.stdout)).toMatchObject({ imported: 1, rejected: [{ line: 2, errors: ["'brandId' must be less than or equal to '2147483647'."] }] });
    expect(await db.query('SELECT id FROM visits WHERE id IN (9101, 9102)')).toEqual([{ id: expect.anything() }]);
    await db.query('DELETE FROM visit_documents WHERE visit_id = 9101');
    await db.query('DELETE FROM visits WHERE id = 9101');
    await db.query("DELETE FROM branches WHERE id IN ('BR-N', 'BR-S')");
  });

  it('refuses a brand on a visit of a branch without one, which /branches would not list for that brand', async () => {
    await cliJson(['branches', 'import', '--client', '1001', file('no-brand.json', '[{"id":"BR-NB","name":"No brand"}]')], env);
    const lines = [JSON.stringify(visit({ visitId: 9201, branchId: 'BR-NB' })), JSON.stringify(visit({ visitId: 9202, branchId: 'BR-NB', brandId: null }))];
    const result = await cli(['--json', 'visits', 'import', file('no-brand.ndjson', lines.join('\n'))], env);
    expect([result.code, result.stderr]).toEqual([1, '']);
    expect(JSON.parse(result.stdout)).toMatchObject({ imported: 1, rejected: [{ line: 1, errors: ["'brandId' 5 is not the brand of branch 'BR-NB' (it has none)."] }] });
    expect(await db.query('SELECT id, brand_id AS brand FROM visits WHERE id IN (9201, 9202)')).toEqual([{ id: expect.anything(), brand: null }]);
    await db.query('DELETE FROM visit_documents WHERE visit_id = 9202');
    await db.query('DELETE FROM visits WHERE id = 9202');
    await db.query("DELETE FROM branches WHERE id = 'BR-NB'");
  });

  it("refuses a visit of another client's branch for that alone, without naming that branch's brand", async () => {
    const record = visit({ visitId: 9203, clientId: 1002 });
    delete record.brandId;
    const result = await cli(['--json', 'visits', 'import', file('foreign-branch.ndjson', JSON.stringify(record))], env);
    expect([result.code, result.stderr]).toEqual([1, '']);
    expect(JSON.parse(result.stdout)).toMatchObject({ imported: 0, rejected: [{ line: 1, errors: ["'branchId' 'BR-1' belongs to client 1001."] }] });
  });

  it('imports visits, refusing a malformed record by its line and writing nothing of it', async () => {
    const lines = [
      JSON.stringify(visit()),
      JSON.stringify(visit({ visitId: 9002, visitScore: 'high', visitDateTime: '2026-02-30T10:00:00' })),
      '{"visitId": 9003,',
      JSON.stringify(visit({ visitId: 9004, visitType: 'OF', guestId: 'G-1', optIns: { contactByEmail: true, joinMarketing: null } })),
      JSON.stringify(visit({ visitId: 9005, branchId: 'BR-404' })),
      JSON.stringify(visit({ visitId: 9006, brandId: 6 })),
      JSON.stringify(visit({ visitId: 9008, visitType: 'ta', guestId: 'G-2' })),
    ];
    await cliJson(['brands', 'add', '--client', '1001', '--id', '6', '--name', 'Acme Pizzeria'], env);
    const result = await cli(['--json', 'visits', 'import', file('visits.ndjson', lines.join('\n'))], env);
    expect(result.code).toBe(1);
    const report = JSON.parse(result.stdout);
    expect(report.imported).toBe(2);
    expect(report.rejected).toEqual([
      {
        line: 2,
        errors: [
          "'visitScore' must be a number: 'high'.",
          "'visitDateTime' is not in the expected format yyyy-mm-ddThh:mm:ss: '2026-02-30T10:00:00'.",
        ],
      },
      { line: 3, errors: [expect.stringMatching(/^not valid JSON/)] },
      { line: 5, errors: ["'branchId' 'BR-404' is not a known branch; import branches first."] },
      { line: 6, errors: ["'brandId' 6 is not the brand of branch 'BR-1' (5)."] },
      { line: 7, errors: ["'guestId' is carried by OF visits only, not by a visit of type 'TA'."] },
    ]);
    expect(await count('visits')).toBe(2);
    const [of] = await db.query("SELECT guest_id, opt_in_contact_by_email AS email, opt_in_join_marketing AS marketing FROM visits WHERE id = 9004");
    expect(of).toEqual({ guest_id: 'G-1', email: expect.anything(), marketing: null });
    expect(Boolean(of.email)).toBe(true);
    // The text report escapes what a value could do to a terminal, and lists lines in order.
    const forged = JSON.stringify(visit({ visitId: 9007, visitType: '\u001b[31mXX\n  line 99: fake' }));
    const text = await cli(['visits', 'import', file('forged.ndjson', [forged, '{"visitId":', forged].join('\n'))], env);
    expect(text.code).toBe(1);
    expect([...text.stdout].filter((c) => c !== '\n' && (c < ' ' || c === '\u007f'))).toEqual([]);
    expect(text.stdout.split('\n').filter((line) => line.startsWith('  line ')).map((line) => line.slice(0, 9))).toEqual(['  line 1:', '  line 2:', '  line 3:']);
    expect(text.stdout).toContain('\\u{1b}[31mXX\\n  line 99: fake');
  });

  it('says where an import stopped and what it wrote when a later batch fails, and imports the rest when run again', async () => {
    // Records 500 apart are in two transactions; the database refuses one visit of the second.
    const many = Array.from({ length: 520 }, (_, i) => JSON.stringify(visit({ visitId: 20_000 + i })));
    if (config.usesPostgres) {
      await db.query(
        `CREATE FUNCTION refuse_visit() RETURNS trigger AS $$ BEGIN IF NEW.id = 20510 THEN RAISE EXCEPTION 'refused by a test trigger'; END IF; RETURN NEW; END $$ LANGUAGE plpgsql`,
      );
      await db.query('CREATE TRIGGER refuse_visit BEFORE INSERT ON visits FOR EACH ROW EXECUTE FUNCTION refuse_visit()');
    } else {
      await db.query("CREATE TRIGGER refuse_visit BEFORE INSERT ON visits WHEN NEW.id = 20510 BEGIN SELECT RAISE(ABORT, 'refused by a test trigger'); END");
    }
    const path = file('two-batches.ndjson', many.join('\n'));
    try {
      const stopped = await cli(['--json', 'visits', 'import', path], env);
      expect(stopped.code).toBe(2);
      expect(stopped.stderr).toMatch(
        /^error: the import stopped at line 501 \([^\n]*refused by a test trigger[^\n]*\); the 500 records before it were written and stay written\. Importing the file again is safe: records already written are unchanged\.\n$/,
      );
      expect(JSON.parse(stopped.stdout)).toMatchObject({ imported: 500, stoppedAtLine: 501, rejected: [] });
      expect(Number((await db.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM visits WHERE id >= 20000 AND id < 20600'))[0].n)).toBe(500);
      // The first batch refused: the same report, saying that nothing was written.
      const first = await cli(['--json', 'visits', 'import', file('first-batch.ndjson', [20_508, 20_509, 20_510].map((id) => JSON.stringify(visit({ visitId: id }))).join('\n'))], env);
      expect(first.code).toBe(2);
      expect(first.stderr).toMatch(/^error: the import stopped at line 1 \([^\n]*refused by a test trigger[^\n]*\); nothing of the file was written\. Importing it again is safe\.\n$/);
      expect(JSON.parse(first.stdout)).toMatchObject({ imported: 0, stoppedAtLine: 1, rejected: [] });
      expect(Number((await db.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM visits WHERE id >= 20000 AND id < 20600'))[0].n)).toBe(500);
    } finally {
      await db.query(config.usesPostgres ? 'DROP TRIGGER refuse_visit ON visits' : 'DROP TRIGGER refuse_visit');
      if (config.usesPostgres) await db.query('DROP FUNCTION refuse_visit()');
    }
    expect(await cliJson(['visits', 'import', path], env)).toMatchObject({ imported: 520, rejected: [] });
    expect(Number((await db.query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM visits WHERE id >= 20000 AND id < 20600'))[0].n)).toBe(520);
    await db.query('DELETE FROM visit_documents WHERE visit_id >= 20000 AND visit_id < 20600');
    await db.query('DELETE FROM visits WHERE id >= 20000 AND id < 20600');
  });

  it('tells apart the refused records of a JSON array written on one line by their place in it', async () => {
    const records = [visit({ visitId: 31_001 }), visit({ visitId: 31_002, visitScore: 101 }), visit({ visitId: 31_003 }), visit({ visitId: 31_004, visitScore: -1 })];
    const path = file('compact.json', JSON.stringify(records));
    const text = await cli(['visits', 'import', path], env);
    expect(text.code).toBe(1);
    expect(text.stdout.split('\n').filter((line) => line.startsWith('  line '))).toEqual([
      "  line 1 (record 2): 'visitScore' must be between '0' and '100'.",
      "  line 1 (record 4): 'visitScore' must be between '0' and '100'.",
    ]);
    const json = await cli(['--json', 'visits', 'import', path], env);
    expect(JSON.parse(json.stdout)).toMatchObject({ imported: 2, rejected: [{ line: 1, element: 2 }, { line: 1, element: 4 }] });
    await db.query('DELETE FROM visit_documents WHERE visit_id > 31000 AND visit_id < 31010');
    await db.query('DELETE FROM visits WHERE id > 31000 AND id < 31010');
  });

  it('writes a visit given twice in a file as its later record says, within a batch of 500 and across two', async () => {
    const records = Array.from({ length: 503 }, (_, i) => visit({ visitId: 30_000 + i, visitScore: 10 }));
    // Visit 30000 again on line 3 (the same batch); visit 30001 again on line 502 (the next batch).
    // Visit 30010 again on line 503, refused: its first record stands.
    records[2] = visit({ visitId: 30_000, visitScore: 20 });
    records[501] = visit({ visitId: 30_001, visitScore: 30 });
    records[502] = visit({ visitId: 30_010, visitScore: 'bad' });
    const twice = file('twice.ndjson', records.map((r) => JSON.stringify(r)).join('\n'));
    const report = await cli(['--json', 'visits', 'import', twice], env);
    expect(JSON.parse(report.stdout)).toMatchObject({ imported: 502, rejected: [{ line: 503 }] });
    const stored = async () =>
      (await db.query<{ id: number | string; s: number; m: string; seq: number | string }[]>(
        'SELECT id, visit_score AS s, modification_date AS m, change_seq AS seq FROM visits WHERE id IN (30000, 30001, 30003, 30010) ORDER BY id',
      )).map((r) => ({ id: Number(r.id), s: r.s, m: r.m, seq: Number(r.seq) }));
    const first = await stored();
    // New visits keep the modificationDate they carry, wherever their records fall.
    expect(first.map(({ id, s, m }) => [id, s, m])).toEqual([
      [30_000, 20, '2026-11-02T08:00:00'],
      [30_001, 30, '2026-11-02T08:00:00'],
      [30_003, 10, '2026-11-02T08:00:00'],
      [30_010, 10, '2026-11-02T08:00:00'],
    ]);
    // The same file again changes nothing: no visit moves in the change feed.
    await cli(['--json', 'visits', 'import', twice], env);
    expect(await stored()).toEqual(first);
    await db.query('DELETE FROM visit_documents WHERE visit_id >= 30000 AND visit_id < 30600');
    await db.query('DELETE FROM visits WHERE id >= 30000 AND id < 30600');
  });

  it('re-imports an MV visit: new scores, modificationDate moved forward', async () => {
    const before = (await db.query('SELECT modification_date AS m, visit_score AS s FROM visits WHERE id = 9001'))[0];
    expect(before).toEqual({ m: '2026-11-02T08:00:00', s: 81.5 });
    const unchanged = await cliJson<{ imported: number }>(['visits', 'import', file('same.json', JSON.stringify([visit()]))], env);
    expect(unchanged.imported).toBe(1);
    expect((await db.query('SELECT modification_date AS m FROM visits WHERE id = 9001'))[0].m).toBe('2026-11-02T08:00:00');

    const changed = visit({ visitScore: 77.25, modificationDate: undefined });
    await cliJson(['visits', 'import', file('changed.json', JSON.stringify([changed]))], env);
    const after = (await db.query('SELECT modification_date AS m, visit_score AS s FROM visits WHERE id = 9001'))[0];
    expect(after.s).toBe(77.25);
    expect(after.m > before.m).toBe(true);
    expect(after.m).toMatch(/^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}$/);
    expect(await count('visits')).toBe(2);
  });

  it('issues a credential once, storing only hashes, and lists it without secrets', async () => {
    const issued = await cliJson<{ clientId: string; clientSecret: string; apiKey: string }>(
      ['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read branches/standard.read', '--brands', '5', '--visit-types', 'mv,OF', '--name', 'Partner A'],
      env,
    );
    expect(issued.clientId).toMatch(/^svc_[0-9a-f]{20}$/);
    expect(issued.clientSecret.length).toBeGreaterThanOrEqual(43);
    expect(issued.apiKey).toMatch(/^svck_/);
    const stored = JSON.stringify(await db.query('SELECT * FROM credentials')) + JSON.stringify(await db.query('SELECT * FROM api_keys'));
    expect(stored).not.toContain(issued.clientSecret);
    expect(stored).not.toContain(issued.apiKey);
    expect(stored).toMatch(/"hmac-sha256\$[0-9a-f]{64}"/);

    const list = await cliJson<unknown[]>(['credentials', 'list'], env);
    expect(list).toEqual([
      {
        clientId: issued.clientId,
        name: 'Partner A',
        scopes: ['svc-results-api', 'visits/standard.read', 'branches/standard.read'],
        clients: [1001],
        brands: [5],
        visitTypes: ['MV', 'OF'],
        disabled: false,
        previousSecretUntil: null,
        createdAt: expect.any(String),
        keys: [{ prefix: issued.apiKey.slice(0, 12), revoked: false, createdAt: expect.any(String) }],
      },
    ]);
    expect(JSON.stringify(list)).not.toContain(issued.clientSecret);

    const key = await cliJson<{ prefix: string; apiKey: string }>(['keys', 'add', issued.clientId], env);
    expect(key.apiKey).not.toBe(issued.apiKey);
    await cliJson(['keys', 'revoke', issued.apiKey.slice(0, 12)], env);
    await cliJson(['credentials', 'disable', issued.clientId], env);
    const [after] = await cliJson<{ disabled: boolean; keys: { revoked: boolean }[] }[]>(['credentials', 'list'], env);
    expect(after.disabled).toBe(true);
    expect(after.keys.map((k) => k.revoked)).toEqual([true, false]);
  });

  it('refuses credentials with unknown scopes, clients, brands or visit types, or an empty list of visit types', async () => {
    const cases: [string[], string][] = [
      [['--clients', '1001', '--scopes', 'visits/everything'], 'unknown scope(s): visits/everything'],
      [['--clients', '999', '--scopes', 'visits/standard.read'], 'client 999 does not exist'],
      [['--clients', '1002', '--scopes', 'visits/standard.read', '--brands', '5'], 'brand 5 is not a brand of client(s) 1002'],
      [['--clients', '1001', '--scopes', 'visits/standard.read', '--visit-types', 'ZZ'], 'unknown visit type(s): ZZ'],
      // Stored, an empty restriction would read as "every visit type".
      [['--clients', '1001', '--scopes', 'visits/standard.read', '--visit-types', ' , '], '--visit-types needs at least one code (leave it out for all types)'],
      // A credential of no scope but the API's could call nothing; a name is kept in 200 characters on either database.
      [['--clients', '1001', '--scopes', ' , '], '--scopes needs at least one scope'],
      [['--clients', '1001', '--scopes', 'visits/standard.read', '--name', 'n'.repeat(201)], '--name must be 1 to 200 characters'],
    ];
    for (const [args, message] of cases) {
      const result = await cli(['credentials', 'add', ...args], env);
      expect(result.code).toBe(1);
      expect(result.stderr).toBe(`error: ${message}\n`);
    }
    expect(await count('credentials')).toBe(1);
  });

  it("changes a credential's entitlements, each option given replacing what it had, checked as add checks them", async () => {
    const issued = await cliJson<{ clientId: string }>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read', '--name', 'Partner U'], env);
    const listed = async () => (await cliJson<{ clientId: string }[]>(['credentials', 'list'], env)).find((c) => c.clientId === issued.clientId);
    const updated = await cliJson(['credentials', 'update', issued.clientId, '--scopes', 'visits/plus.read', '--brands', '5', '--visit-types', 'mv'], env);
    expect(updated).toEqual(await listed());
    expect(updated).toMatchObject({ name: 'Partner U', clients: [1001], scopes: ['svc-results-api', 'visits/plus.read'], brands: [5], visitTypes: ['MV'] });
    // `all` lifts a restriction; what is not named stays.
    expect(await cliJson(['credentials', 'update', issued.clientId, '--brands', 'all', '--name', 'Partner V'], env)).toMatchObject({ name: 'Partner V', brands: null, visitTypes: ['MV'] });
    const text = await cli(['credentials', 'update', issued.clientId, '--visit-types', 'ALL'], env);
    expect(text.code).toBe(0);
    expect(text.stdout).toContain(`${issued.clientId}  Partner V\n  clients 1001  brands all  visit types all\n  scopes svc-results-api visits/plus.read\n  key `);
    const refused: [string[], string][] = [
      [[], 'give at least one of --clients, --scopes, --brands, --visit-types, --name'],
      [['--scopes', 'visits/everything'], 'unknown scope(s): visits/everything'],
      [['--clients', '999'], 'client 999 does not exist'],
      // The brands of the result must belong to its clients, whichever of the two is changed.
      [['--brands', '5', '--clients', '1002'], 'brand 5 is not a brand of client(s) 1002'],
      [['--visit-types', 'ZZ'], 'unknown visit type(s): ZZ'],
      [['--visit-types', ' , '], '--visit-types needs at least one code (leave it out for all types)'],
    ];
    for (const [args, message] of refused) {
      const result = await cli(['credentials', 'update', issued.clientId, ...args], env);
      expect({ args, code: result.code, stderr: result.stderr }).toEqual({ args, code: 1, stderr: `error: ${message}\n` });
    }
    await cliJson(['credentials', 'update', issued.clientId, '--brands', '5'], env);
    const brandsNotOfClients = await cli(['credentials', 'update', issued.clientId, '--clients', '1002'], env);
    expect(brandsNotOfClients.stderr).toBe('error: brand 5 is not a brand of client(s) 1002\n');
    expect(await listed()).toMatchObject({ clients: [1001], brands: [5], visitTypes: null, scopes: ['svc-results-api', 'visits/plus.read'] });
    expect((await cli(['credentials', 'update', 'svc_nobody', '--name', 'x'], env)).stderr).toBe("error: credential 'svc_nobody' does not exist\n");
  });

  it('rotates a client secret, printed once: the old one kept for the hours asked, or not at all', async () => {
    const issued = await cliJson<{ clientId: string; clientSecret: string }>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read'], env);
    const row = async () => (await db.query<Record<string, unknown>[]>(`SELECT * FROM credentials WHERE client_id = '${issued.clientId}'`))[0];
    const before = await row();
    const kept = await cliJson<{ clientId: string; clientSecret: string; previousSecretUntil: string }>(['credentials', 'rotate-secret', issued.clientId, '--keep-old-hours', '1.5'], env);
    expect(kept).toEqual({ clientId: issued.clientId, clientSecret: expect.stringMatching(/^svcs_[\w-]{43}$/), previousSecretUntil: expect.any(String) });
    expect(Date.parse(kept.previousSecretUntil) - Date.now()).toBeGreaterThan(5_000_000);
    const after = await row();
    expect(after.previous_secret_hash).toBe(before.secret_hash);
    const listed = (await cliJson<{ clientId: string; previousSecretUntil: string | null }[]>(['credentials', 'list'], env)).find((c) => c.clientId === issued.clientId);
    expect(listed?.previousSecretUntil).toBe(kept.previousSecretUntil);
    expect((await cli(['credentials', 'list'], env)).stdout).toContain(`  previous secret accepted until ${kept.previousSecretUntil}\n`);
    expect(after.secret_hash).toMatch(/^hmac-sha256\$[0-9a-f]{64}$/);
    expect(JSON.stringify(after)).not.toContain(kept.clientSecret);
    const gone = await cliJson<{ previousSecretUntil: null }>(['credentials', 'rotate-secret', issued.clientId], env);
    expect(gone.previousSecretUntil).toBeNull();
    expect(await row()).toMatchObject({ previous_secret_hash: null, previous_secret_until: null });
    expect((await cliJson<{ clientId: string; previousSecretUntil: string | null }[]>(['credentials', 'list'], env)).find((c) => c.clientId === issued.clientId)?.previousSecretUntil).toBeNull();
    for (const hours of ['-1', '721', 'soon', '1e3']) {
      const result = await cli(['credentials', 'rotate-secret', issued.clientId, '--keep-old-hours', hours], env);
      expect({ hours, code: result.code, stderr: result.stderr }).toEqual({ hours, code: 1, stderr: `error: --keep-old-hours must be a number of hours from 0 to 720: '${hours}'\n` });
    }
  });

  it('imports menus with dishes and images, all of the file or nothing', async () => {
    await sharp({ create: { width: 40, height: 30, channels: 3, background: '#a33' } }).png().toFile(join(files, 'steak.png'));
    await sharp({ create: { width: 20, height: 10, channels: 3, background: '#3a3' } }).jpeg().toFile(join(files, 'salad.jpg'));
    writeFileSync(join(files, 'fake.png'), 'this is text, not an image');
    const menu = (dishes: unknown[]): string =>
      file('menus.json', JSON.stringify([{ id: 101, name: 'Autumn', startDate: '2026-09-01', endDate: null, dishes }]));
    const steak = { code: 'ST-1', description: 'Ribeye steak', type: 'Main', order: 1, keywords: ['beef'], image: 'steak.png' };
    const salad = { code: 'SA-1', description: 'Garden salad', type: 'Starter', expiryDate: '2026-12-31', image: 'salad.jpg' };

    const bad = await cli(['--json', 'menus', 'import', '--client', '1001', menu([steak, { ...salad, image: 'fake.png', code: 'x'.repeat(51) }])], env);
    expect(bad.code).toBe(1);
    expect(JSON.parse(bad.stdout).rejected).toEqual([
      {
        line: 1,
        element: 1,
        errors: ["'dishes[1].code' must be at most 50 characters.", "'dishes[1].image': The image must be a JPEG, PNG or WebP file."],
      },
    ]);
    expect(await count('menus')).toBe(0);
    expect(await count('dish_images')).toBe(0);
    // A dish's own fields are named with its place too; a keyword of spaces is one, an empty image path none.
    const odd = { code: 'OD-1', description: 'Odd', type: 'Main', expiryDate: '2026-02-30', keywords: [' ', ''], image: '' };
    const named = await cli(['--json', 'menus', 'import', '--client', '1001', menu([odd])], env);
    expect(JSON.parse(named.stdout).rejected).toEqual([
      {
        line: 1,
        element: 1,
        errors: [
          "'dishes[0].expiryDate' is not in the expected format yyyy-mm-dd: '2026-02-30'.",
          "'dishes[0].keywords[1]' must be a non-empty string.",
          "'dishes[0].image' must be the path of an image file, or left out for none.",
        ],
      },
    ]);
    const ended = await cli(['--json', 'menus', 'import', '--client', '1001', file('ended.json', JSON.stringify([{ id: 120, name: 'Backwards', startDate: '2026-11-01', endDate: '2026-10-01' }]))], env);
    expect(JSON.parse(ended.stdout).rejected[0].errors).toEqual(["'endDate' must be on or after 'startDate' (2026-11-01): '2026-10-01'."]);
    const unreadable = await cli(['--json', 'menus', 'import', '--client', '1001', menu([{ ...odd, expiryDate: null, keywords: [' '], image: '.' }])], env);
    expect(JSON.parse(unreadable.stdout).rejected[0].errors).toEqual(["'dishes[0].image': cannot read '.': it is not a file."]);
    // A device is not read at all, a file past the size limit not whole.
    const device = await cli(['--json', 'menus', 'import', '--client', '1001', menu([{ ...odd, expiryDate: null, keywords: [], image: '/dev/zero' }])], env);
    expect(JSON.parse(device.stdout).rejected[0].errors).toEqual(["'dishes[0].image': cannot read '/dev/zero': it is not a file."]);
    const large = file('large.png', Buffer.alloc(5000, 1));
    const tooLarge = await cli(['--json', 'menus', 'import', '--client', '1001', menu([{ ...odd, expiryDate: null, keywords: [], image: large }])], { ...env, IMAGE_MAX_BYTES: '4096' });
    expect(JSON.parse(tooLarge.stdout).rejected[0].errors).toEqual(["'dishes[0].image': The image must be at most 4096 bytes (4 KiB)."]);
    // The file's images together are bounded: all are held until the file is written.
    await sharp({ create: { width: 600, height: 400, channels: 3, background: '#808080', noise: { type: 'gaussian', mean: 128, sigma: 40 } } }).png().toFile(join(files, 'noise.png'));
    expect(statSync(join(files, 'noise.png')).size).toBeGreaterThan(600 * 1024);
    const noisy = (code: string) => ({ ...steak, code, image: 'noise.png' });
    const overBudget = await cli(['--json', 'menus', 'import', '--client', '1001', menu([noisy('N-1'), noisy('N-2'), noisy('N-3')])], { ...env, MENUS_IMPORT_IMAGES_MB: '1' });
    expect(overBudget.code).toBe(1);
    const budget = "the images of the file are more than 1 MiB together (MENUS_IMPORT_IMAGES_MB), all held until the file is written: import its menus in several files.";
    expect(JSON.parse(overBudget.stdout).rejected).toEqual([{ line: 1, element: 1, errors: [`'dishes[1].image': ${budget}`, `'dishes[2].image': ${budget}`] }]);
    expect(await count('menus')).toBe(0);
    // One image within it is no refusal of the budget (the file is refused for its code alone).
    const within = await cli(['--json', 'menus', 'import', '--client', '1001', menu([{ ...noisy('N-1'), code: '' }])], { ...env, MENUS_IMPORT_IMAGES_MB: '1' });
    expect(JSON.parse(within.stdout).rejected).toEqual([{ line: 1, element: 1, errors: ["'dishes[0].code' must not be empty."] }]);

    const good = await cliJson<{ imported: number }>(['menus', 'import', '--client', '1001', menu([steak, salad])], env);
    expect(good.imported).toBe(1);
    const dishes = await db.query(
      'SELECT d.code, d.keywords, d.expiry_date AS expiry, i.content_type AS type, i.width, i.height FROM dishes d JOIN dish_images i ON i.id = d.image_id ORDER BY d.code',
    );
    expect(dishes).toEqual([
      { code: 'SA-1', keywords: '[]', expiry: '2026-12-31', type: 'image/jpeg', width: 20, height: 10 },
      { code: 'ST-1', keywords: '["beef"]', expiry: null, type: 'image/png', width: 40, height: 30 },
    ]);
    const imageOf = async (code: string): Promise<string> =>
      (await db.query<{ image_id: string }[]>(`SELECT image_id FROM dishes WHERE code = '${code}'`))[0].image_id;
    const steakImage = await imageOf('ST-1');
    await cliJson(['menus', 'import', '--client', '1001', menu([{ ...steak, description: 'Sirloin steak' }])], env);
    expect(await count('dishes')).toBe(2);
    expect(await imageOf('ST-1')).toBe(steakImage);
    await cliJson(['menus', 'import', '--client', '1001', menu([{ ...steak, image: 'salad.jpg' }])], env);
    expect(await imageOf('ST-1')).not.toBe(steakImage);
    expect(await count('dish_images')).toBe(2);
    // Replaced whole, as an upload replaces it: imported again without its image, the dish has none.
    await cliJson(['menus', 'import', '--client', '1001', menu([{ ...steak, image: undefined }, salad])], env);
    expect(await imageOf('ST-1')).toBeNull();
    expect(await count('dish_images')).toBe(1);
    await cliJson(['menus', 'import', '--client', '1001', menu([{ ...steak, image: 'salad.jpg' }])], env);
    expect(await count('dish_images')).toBe(2);
    const foreign = await cli(['menus', 'import', '--client', '1002', menu([steak])], env);
    expect(foreign.stdout).toContain('menu 101 belongs to client 1001.');
    // One menu twice in a file: refused by the second one's line, and nothing of the file written.
    const twice = file('twice.json', JSON.stringify([
      { id: 110, name: 'Once', startDate: '2026-09-01', dishes: [{ ...steak, code: 'A-1', image: undefined }] },
      { id: 110, name: 'Twice', startDate: '2026-09-01', dishes: [{ ...salad, code: 'B-1', image: undefined }] },
    ]));
    const duplicated = await cli(['--json', 'menus', 'import', '--client', '1001', twice], env);
    expect([duplicated.code, JSON.parse(duplicated.stdout).rejected]).toEqual([1, [{ line: 1, element: 2, errors: ['menu 110 appears more than once in the file.'] }]]);
    expect(await db.query('SELECT id FROM menus WHERE id = 110')).toEqual([]);
  });

  it('sweeps the image folder: nothing with images in the database; with files, what no image names, once old enough', async () => {
    expect(await cli(['images', 'sweep'], env)).toEqual({
      code: 0,
      stdout: 'images are kept in the database (IMAGE_STORAGE=database): nothing to sweep\n',
      stderr: '',
    });
    const folder = mkdtempSync(join(tmpdir(), 'cli-images-'));
    const filesystem = { ...env, IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: folder };
    const orphan = '0b8e2c1e-0f3a-4c55-9d2e-8f1b2a3c4d5e';
    writeFileSync(join(folder, orphan), 'left by a process stopped mid-write');
    const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
    utimesSync(join(folder, orphan), twoHoursAgo, twoHoursAgo);
    const dry = await cli(['images', 'sweep', '--dry-run'], filesystem);
    expect(dry).toEqual({
      code: 0,
      stdout:
        `${folder}: 1 files checked; would remove (--dry-run) 1 that no image names (35 bytes)\n` +
        `  ${orphan}  35 bytes  modified ${twoHoursAgo.toISOString()}\n`,
      stderr: '',
    });
    expect(await cliJson(['images', 'sweep', '--min-age-minutes', '180'], filesystem)).toEqual({ folder, checked: 1, orphans: [], tooRecent: 1, removed: true, damaged: [] });
    expect(readdirSync(folder)).toEqual([orphan]);
    expect(await cliJson(['images', 'sweep'], filesystem)).toMatchObject({ orphans: [{ name: orphan, bytes: 35 }], removed: true });
    expect(readdirSync(folder)).toEqual([]);

    // An image whose file was cut short, one whose file is gone (a restore that left them out),
    // and one with other bytes of its size: reported, left, and the run fails so that a
    // scheduled sweep is noticed; the last only when every file is read (--verify).
    await sharp({ create: { width: 8, height: 8, channels: 3, background: '#36c' } }).png().toFile(join(files, 'swept.png'));
    const dishes = [1, 2, 3].map((n) => ({ code: `SW-${n}`, description: 'Swept', type: 'Main', image: 'swept.png' }));
    await cliJson(['clients', 'add', '--id', '1301', '--name', 'Swept Dining'], env);
    await cliJson(['menus', 'import', '--client', '1301', file('swept.json', JSON.stringify([{ id: 131, name: 'Swept', startDate: '2026-09-01', dishes }]))], filesystem);
    const [changed, cut, gone] = readdirSync(folder).sort();
    const stored = statSync(join(folder, cut)).size;
    const flipped = readFileSync(join(folder, changed));
    flipped[flipped.length - 1] ^= 0xff;
    writeFileSync(join(folder, changed), flipped);
    writeFileSync(join(folder, cut), 'cut');
    rmSync(join(folder, gone));
    const damaged = [
      { name: cut, bytes: 3, storedBytes: stored, why: 'size' },
      { name: gone, bytes: null, storedBytes: stored, why: 'missing' },
    ];
    const report = await cli(['--json', 'images', 'sweep', '--dry-run'], filesystem);
    expect([report.code, JSON.parse(report.stdout)]).toEqual([1, { folder, checked: 2, orphans: [], tooRecent: 0, removed: false, damaged }]);
    const verified = await cli(['--json', 'images', 'sweep', '--dry-run', '--verify'], filesystem);
    expect([verified.code, JSON.parse(verified.stdout).damaged]).toEqual([1, [{ name: changed, bytes: stored, storedBytes: stored, why: 'content' }, ...damaged]]);
    expect(await cli(['images', 'sweep', '--verify'], filesystem)).toEqual({
      code: 1,
      stdout:
        `${folder}: 2 files checked; removed 0 that no image names (0 bytes)\n` +
        "3 image(s) whose file is missing or not what was stored, which the service refuses to serve: restore them from a backup, or upload their dishes' images again\n" +
        `  ${changed}  other bytes of the size, ${stored} stored\n  ${cut}  3 bytes, ${stored} stored\n  ${gone}  missing, ${stored} stored\n`,
      stderr: '',
    });
    expect(readdirSync(folder).sort()).toEqual([changed, cut]);
    await db.query("DELETE FROM dishes WHERE code LIKE 'SW-%'");
    await db.query('DELETE FROM dish_images WHERE storage_key IS NOT NULL');
    expect(await cli(['images', 'sweep', '--min-age-minutes', '0'], filesystem)).toEqual({
      code: 1,
      stdout: '',
      stderr: "error: --min-age-minutes must be an integer greater than 0: '0'\n",
    });
  });

  describe('the demo data set', () => {
    /**
     * A database of its own, with a week of visits (DEMO_DAYS; 90 by default, which
     * test/embedded/start loads): this file's clients 1001 and 1002 have names of their own,
     * which the demo is not loaded over.
     */
    const demo = isolatedConfig({ DEMO_DAYS: '7' });
    const demoEnv = demo.env;
    let demoDb: DataSource;
    beforeAll(async () => {
      await cliJson(['migrations', 'run'], demoEnv);
      demoDb = await new DataSource(dataSourceOptions(demo.config)).initialize();
    });
    afterAll(async () => {
      await demoDb.destroy();
      await demo.drop();
    });
    const demoCount = async (table: string): Promise<number> =>
      Number((await demoDb.query<{ n: string | number }[]>(`SELECT COUNT(*) AS n FROM ${table}`))[0]?.n);

    it('loads the demo data set and writes its credentials', async () => {
      const visitsBefore = await demoCount('visits');
      const summary = await cliJson<{ clients: number; branches: number; visits: number; menus: number; credentialsFile: string }>(['demo'], demoEnv);
      expect(summary.clients).toBe(2);
      expect(summary.branches).toBeGreaterThanOrEqual(35);
      // About 50 a day, each written once.
      expect(summary.visits).toBeGreaterThan(7 * 30);
      expect(summary.visits).toBeLessThan(7 * 80);
      expect(await demoCount('visits')).toBe(visitsBefore + summary.visits);
      expect(summary.menus).toBe(3);
      expect(summary.credentialsFile).toBe(join(demo.config.DATA_DIR, 'demo-credentials.json'));
      const types = await demoDb.query<{ visit_type: string }[]>('SELECT DISTINCT visit_type FROM visits ORDER BY visit_type');
      expect(types.map((t) => t.visit_type)).toEqual(['MV', 'OF', 'TA']);
      const nullable = await demoDb.query<{ n: string | number }[]>('SELECT COUNT(*) AS n FROM visits WHERE recommend_score IS NULL');
      expect(Number(nullable[0]?.n)).toBeGreaterThan(0);
      // Hundreds of visits and dozens of images: seconds on an idle machine, many times that on a busy one.
    }, 300_000);

    it('refuses the demo data set before writing anything when a brand id of it belongs to another client, and disables the demo credentials it replaces', async () => {
      const other = isolatedConfig();
      try {
        await cliJson(['migrations', 'run'], other.env);
        await cliJson(['clients', 'add', '--id', '7', '--name', 'Seven'], other.env);
        await cliJson(['brands', 'add', '--client', '7', '--id', '21', '--name', 'Taken'], other.env);
        const refused = await cli(['demo'], { ...other.env, DEMO_DAYS: '7' });
        const refusal = "error: the demo data set needs a database without data of its ids that is not the demo's (nothing was written): ";
        expect([refused.code, refused.stderr]).toEqual([1, `${refusal}brand 21 belongs to client 7, not 1002\n`]);
        expect(await cliJson<{ id: number }[]>(['clients', 'list'], other.env)).toEqual([expect.objectContaining({ id: 7 })]);
        // An operator's own client of a demo id, with a menu and a branch of the demo's ids: each
        // said, and none of it renamed (the importers refused them only when they came to them).
        await cliJson(['clients', 'add', '--id', '1001', '--name', 'Mine'], other.env);
        const menus = join(other.config.DATA_DIR, 'menus.json');
        writeFileSync(menus, JSON.stringify([{ id: 101, name: 'My own menu', startDate: '2026-11-01', endDate: null, dishes: [] }, { id: 201, name: 'Other', startDate: '2026-11-01', endDate: null, dishes: [] }]));
        await cliJson(['menus', 'import', '--client', '1001', menus], other.env);
        const branches = join(other.config.DATA_DIR, 'branches.json');
        writeFileSync(branches, JSON.stringify([{ id: 'BR-1002-0001', name: 'Seven Dials', branchCode: 'SD-1' }]));
        await cliJson(['branches', 'import', '--client', '7', branches], other.env);
        const again = await cli(['demo'], { ...other.env, DEMO_DAYS: '7' });
        expect([again.code, again.stderr]).toEqual([
          1,
          `${refusal}client 1001 is "Mine" here, not the demo's "Acme Dining Group"; brand 21 belongs to client 7, not 1002; branch 'BR-1002-0001' belongs to client 7, not 1002; menu 201 belongs to client 1001, not 1002\n`,
        ]);
        expect((await cliJson<{ id: number; name: string }[]>(['clients', 'list'], other.env)).map((c) => [c.id, c.name])).toEqual([[7, 'Seven'], [1001, 'Mine']]);
        const otherDb = await new DataSource(dataSourceOptions(other.config)).initialize();
        try {
          expect(await otherDb.query('SELECT id, name FROM menus ORDER BY id')).toEqual([{ id: 101, name: 'My own menu' }, { id: 201, name: 'Other' }]);
          expect(Number((await otherDb.query<{ n: string }[]>('SELECT COUNT(*) AS n FROM visits'))[0].n)).toBe(0);
        } finally {
          await otherDb.destroy();
        }
      } finally {
        await other.drop();
      }
      // Loaded again on other days (zones 26 hours apart, so their dates differ): each visit
      // keeps its id and its client, and the days since are added (ids counted from the first
      // visit made moved them to others, refused part way).
      const visits = await demoCount('visits');
      for (const zone of ['Etc/GMT-14', 'Etc/GMT+12']) {
        const loaded = await cli(['--json', 'demo'], { ...demoEnv, RESULTS_TIMEZONE: zone });
        expect([zone, loaded.code, loaded.stderr]).toEqual([zone, 0, '']);
      }
      expect(await demoCount('visits')).toBeGreaterThanOrEqual(visits);
      // The demo loaded above: its credentials, then loaded again: the earlier ones are disabled, the file has the new ones.
      const first = JSON.parse(readFileSync(join(demo.config.DATA_DIR, 'demo-credentials.json'), 'utf8')) as { credentials: { clientId: string }[] };
      await cliJson(['demo'], demoEnv);
      const second = JSON.parse(readFileSync(join(demo.config.DATA_DIR, 'demo-credentials.json'), 'utf8')) as { credentials: { clientId: string }[] };
      const listed = await cliJson<{ clientId: string; disabled: boolean }[]>(['credentials', 'list'], demoEnv);
      const state = (id: string) => listed.find((c) => c.clientId === id)?.disabled;
      expect(first.credentials.map((c) => state(c.clientId))).toEqual([true, true]);
      expect(second.credentials.map((c) => state(c.clientId))).toEqual([false, false]);
    }, 300_000);
  });

  it('revokes a key given whole, as an operator holding a leaked key has it, matched by its hash', async () => {
    const issued = await cliJson<{ clientId: string; apiKey: string }>(['credentials', 'add', '--clients', '1001', '--scopes', 'branches/standard.read'], env);
    const made = `${issued.apiKey.slice(0, -1)}${issued.apiKey.endsWith('A') ? 'B' : 'A'}`;
    expect(JSON.parse((await cli(['--json', 'keys', 'revoke', made], env)).stdout)).toEqual({
      error: `no API key is '${issued.apiKey.slice(0, 12)}…': give the whole key, or its 12-character prefix as credentials list shows it`,
    });
    expect(await cliJson(['keys', 'revoke', issued.apiKey], env)).toEqual({ prefix: issued.apiKey.slice(0, 12), revoked: true });
    const listed = await cliJson<{ clientId: string; keys: { prefix: string; revoked: boolean }[] }[]>(['credentials', 'list'], env);
    expect(listed.find((c) => c.clientId === issued.clientId)?.keys).toEqual([expect.objectContaining({ prefix: issued.apiKey.slice(0, 12), revoked: true })]);
  });

  it('takes back a credential, a key or a webhook endpoint whose secret its output could not show (a full disk), and says so in one line, exit 2', async () => {
    const full = Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    const credentials = await count('credentials');
    const keys = await count('api_keys');
    const lost = await cli(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read', '--name', 'never shown'], env, { stdoutFails: full });
    expect(lost).toEqual({
      code: 2,
      stdout: '',
      stderr: 'error: cannot write the output (ENOSPC: no space left on device, write): what it would have shown once was taken back; nothing was made\n',
    });
    expect([await count('credentials'), await count('api_keys')]).toEqual([credentials, keys]);

    const owner = await cliJson<{ clientId: string }>(['credentials', 'add', '--clients', '1001', '--scopes', 'visits/standard.read', '--name', 'key owner'], env);
    const key = await cli(['keys', 'add', owner.clientId, '--json'], env, { stdoutFails: full });
    expect([key.code, key.stderr]).toEqual([2, expect.stringMatching(/^error: cannot write the output \(ENOSPC[^)]*\): what it would have shown once was taken back; nothing was made\n$/)]);
    const [listed] = (await cliJson<{ clientId: string; keys: { revoked: boolean }[] }[]>(['credentials', 'list'], env)).filter((c) => c.clientId === owner.clientId);
    // The first key stays; the one never shown is gone, as the message says (not left revoked).
    expect(listed.keys.map((k) => k.revoked)).toEqual([false]);
    expect(await count('api_keys')).toBe(keys + 1);

    const endpoint = await cli(['webhooks', 'add', owner.clientId, '--url', 'https://10.1.2.3/hook', '--allow-private'], env, { stdoutFails: full });
    expect(endpoint.code).toBe(2);
    expect(await cliJson(['webhooks', 'list'], env)).toEqual([]);

    // A rotation whose new secret was not shown is taken back: the receiver's secret signs on alone.
    const hook = await cliJson<{ id: string }>(['webhooks', 'add', owner.clientId, '--url', 'https://10.1.2.4/hook', '--allow-private'], env);
    const rotation = await cli(['webhooks', 'rotate-secret', hook.id], env, { stdoutFails: full });
    expect([rotation.code, rotation.stderr]).toEqual([2, expect.stringMatching(/^error: cannot write the output \(ENOSPC[^)]*\): what it would have shown once was taken back; nothing was made\n$/)]);
    const [listedHook] = await cliJson<{ id: string; previousSecretUntil: string | null }[]>(['webhooks', 'list'], env);
    expect([listedHook.id, listedHook.previousSecretUntil]).toEqual([hook.id, null]);
    // So a rotation now keeps the receiver's secret signing for its 24 hours, and drops none.
    const again = await cliJson<{ previousSecretUntil: string | null; secretDroppedEarly: string | null }>(['webhooks', 'rotate-secret', hook.id], env);
    expect([typeof again.previousSecretUntil, again.secretDroppedEarly]).toEqual(['string', null]);
  });

  it('reports keys and credentials that do not exist', async () => {
    expect((await cli(['keys', 'revoke', 'svck_nothing'], env)).stderr).toContain("no API key has the prefix 'svck_nothing'");
    expect((await cli(['credentials', 'disable', 'svc_nobody'], env)).stderr).toContain("credential 'svc_nobody' does not exist");
    // A client secret pasted for the id is not echoed into the terminal's or the Job's log.
    for (const verb of ['disable', 'rotate-secret']) {
      expect((await cli(['credentials', verb, 'svcs_Pasted-By-Mistake_0123456789'], env)).stderr).toBe(
        "error: credential '[redacted]' does not exist: that is a secret, an API key or a token by its form, not a client id (svc_…, as credentials list shows them)\n",
      );
    }
  });

  it('takes a signing key id that begins with a dash as the key id, not as an option', async () => {
    // Key ids are base64url thumbprints: about one in 32 begins with '-'.
    const result = await cli(['signing-keys', 'retire', '-fvVIqdZ_Y-JustNtI3hc'], env);
    expect(result.code).toBe(1);
    expect(result.stderr).toBe("error: no signing key has the id '-fvVIqdZ_Y-JustNtI3hc'\n");
  });

  it('reads an import file named relative to the folder npm run cli was typed in, not the project folder npm runs it in', async () => {
    await cliJson(['clients', 'add', '--id', '1001', '--name', 'Acme Dining'], env);
    const path = file('relative-branches.csv', 'id,name\nBR-REL,Relative\n');
    // What npm gives the command: the folder it was started in (INIT_CWD); the process runs in the project's.
    const result = await cli(['branches', 'import', '--client', '1001', 'relative-branches.csv'], { ...env, npm_lifecycle_event: 'cli', INIT_CWD: files });
    expect(result).toEqual({ code: 0, stdout: `${path}: imported 1, rejected 0\n`, stderr: '' });
  });

  it('says a mistyped option of signing-keys retire as one', async () => {
    for (const args of [
      ['abc', '--forec'],
      ['--forec', 'abc'],
    ]) {
      const result = await cli(['signing-keys', 'retire', ...args], env);
      expect([result.code, result.stderr]).toEqual([1, "error: unknown option '--forec'\n"]);
    }
    const more = await cli(['signing-keys', 'retire', 'abc', 'def'], env);
    expect([more.code, more.stderr]).toEqual([1, "error: one key id only: 'def' is more\n"]);
  });

  it('will not retire the key that signed until a rotation while replicas may still sign with it, unless forced', async () => {
    const first = await cliJson<{ kid: string }>(['signing-keys', 'rotate', '--now'], env);
    const second = await cliJson<{ kid: string }>(['signing-keys', 'rotate', '--now'], env);
    // The longest window there is (30 s), far longer than the commands take on a busy machine.
    const early = await cli(['signing-keys', 'retire', first.kid], { ...env, AUTH_CACHE_SECONDS: '30' });
    expect(early.code).toBe(1);
    const said = new RegExp(`^error: '${first.kid}' signed new tokens until the rotation (\\d+) s ago, and replicas go on signing with it for up to AUTH_CACHE_SECONDS \\(30 s\\) after it, tokens that retiring it now would break: retire it in (\\d+) s, or now with --force \\(a compromised key\\)\n$`).exec(early.stderr);
    expect(said).not.toBeNull();
    const [ago, wait] = [Number(said?.[1]), Number(said?.[2])];
    expect(ago).toBeLessThan(30);
    // Whole seconds of the same 30, the time since rounded down and the wait up.
    expect(ago + wait).toBe(30);
    expect((await cliJson<{ kid: string; retiredAt: string | null }[]>(['signing-keys', 'list'], env)).find((k) => k.kid === first.kid)?.retiredAt).toBeNull();
    expect(await cliJson(['signing-keys', 'retire', first.kid, '--force'], env)).toEqual({ kid: first.kid, retired: true });
    // Run again (a script retried), the retirement stands and changes nothing.
    const retiredAt = async () => (await cliJson<{ kid: string; retiredAt: string | null }[]>(['signing-keys', 'list'], env)).find((k) => k.kid === first.kid)?.retiredAt;
    const when = await retiredAt();
    expect(when).toEqual(expect.any(String));
    const again = await cli(['signing-keys', 'retire', first.kid], env);
    expect([again.code, again.stdout]).toEqual([0, `signing key ${first.kid} was retired already\n`]);
    expect(await retiredAt()).toBe(when);
    // Once AUTH_CACHE_SECONDS have passed every replica signs with the new key: no force needed (here with a window of 0 s).
    await cliJson(['signing-keys', 'rotate', '--now'], env);
    expect(await cliJson(['signing-keys', 'retire', second.kid], { ...env, AUTH_CACHE_SECONDS: '0' })).toEqual({ kid: second.kid, retired: true });
  });

  // The commands above run in this process; this starts the binary itself, as operators and the migration Job do.
  // Its output, exit codes and help: test/embedded/cli-embedded.e2e-spec.ts (once, on SQLite).
  describe('the built binary, node dist/cli.js', () => {
    const LIMIT = SPAWN_TIMEOUT_MS + 30_000;

    it('stops an import asked to stop (SIGTERM) after the batch being written, and says what was written and where it stopped', async () => {
      // 40,000 visits of their own ids, 80 batches: the signal comes once the first are in.
      const firstId = 700_000;
      const records = Array.from({ length: 40_000 }, (_, i) => JSON.stringify(visit({ visitId: firstId + i, modificationDate: '2026-11-02T08:00:00' })));
      const path = file('long.ndjson', `${records.join('\n')}\n`);
      const written = async (): Promise<number> =>
        Number((await db.query<{ n: string | number }[]>(`SELECT COUNT(*) AS n FROM visits WHERE id BETWEEN ${firstId} AND ${firstId + records.length - 1}`))[0]?.n);
      expect(await written()).toBe(0);
      const { child, result } = startCli(['--json', 'visits', 'import', path], env);
      const deadline = Date.now() + SPAWN_TIMEOUT_MS;
      while ((await written()) === 0 && child.exitCode === null && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      child.kill('SIGTERM');
      const ended = await result;
      const stored = await written();
      try {
        expect({ code: ended.code, signal: ended.signal }).toEqual({ code: 2, signal: null });
        const report = JSON.parse(ended.stdout) as { error: string; imported: number; rejected: unknown[]; stoppedAtLine: number };
        // Whole batches only, every one of them reported, and the line the next one starts at.
        expect(stored % 500).toBe(0);
        expect(stored).toBeGreaterThan(0);
        expect(stored).toBeLessThan(records.length);
        expect(report).toEqual({
          error: `the import stopped at line ${stored + 1} (the process received SIGTERM); the ${stored} records before it were written and stay written. Importing the file again is safe: records already written are unchanged.`,
          file: path,
          imported: stored,
          rejected: [],
          stoppedAtLine: stored + 1,
        });
        expect(ended.stderr).toBe(`SIGTERM: stopping once the batch being written is committed; a second signal stops at once, rolling it back.\nerror: ${report.error}\n`);
      } finally {
        await db.query(`DELETE FROM visit_documents WHERE visit_id BETWEEN ${firstId} AND ${firstId + records.length - 1}`);
        await db.query(`DELETE FROM visits WHERE id BETWEEN ${firstId} AND ${firstId + records.length - 1}`);
      }
    }, LIMIT);

  });

  it('says a folder it cannot make, IMAGE_STORAGE_DIR (DATA_DIR: test/embedded/cli-embedded), in one line with exit 2, and ends its --json error with a newline', async () => {
    const aFile = file('not-a-parent', 'a file where a folder should be');
    const images = join(aFile, 'img');
    const noImages = await spawnCli(['clients', 'list'], { ...env, IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: images });
    expect(noImages).toEqual({ code: 2, stdout: '', stderr: `error: cannot use ${images}: ENOTDIR: not a directory, mkdir '${images}'\n` });
    // Every error said in JSON ends its line, so that the last line of stdout is a whole one.
    for (const args of [['--json', 'keys', 'revoke', 'svck_none'], ['--json', 'clients', 'add', '--name', 'X'], ['--json']]) {
      const failed = await cli(args, env);
      expect(failed.code).toBe(1);
      expect(failed.stdout).toMatch(/^\{"error":"[^\n]+"\}\n$/);
    }
  }, SPAWN_TIMEOUT_MS + 30_000);
});
