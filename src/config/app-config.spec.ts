import { mkdtempSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, databaseKindFromEnvironment, loadConfig, usableFolder } from './app-config.js';

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error('expected the configuration to be refused');
}

describe('loadConfig', () => {
  it('uses the documented defaults when nothing is set', () => {
    const config = loadConfig({});
    expect(config.PORT).toBe(3000);
    expect(config.DATABASE_URL).toBeUndefined();
    expect(config.usesPostgres).toBe(false);
    expect(config.DATA_DIR).toBe('./data');
    expect(config.RESULTS_TIMEZONE).toBe('Europe/London');
    expect(config.VISITS_TAKE_MAX).toBe(1000);
    expect(config.VISITS_MAX_RANGE_DAYS).toBe(31);
    expect(config.LOG_LEVEL).toBe('info');
    expect(config.SEED_DEMO).toBe(true);
    expect(config.DEMO_DAYS).toBe(90);
    expect(config.baseUrl).toBe('http://localhost:3000');
  });

  it('reads and converts every kind of value', () => {
    const config = loadConfig({
      PORT: '8080',
      DATABASE_URL: 'postgres://u@db:5432/results',
      REDIS_URL: 'redis://cache:6379',
      RESULTS_TIMEZONE: 'America/New_York',
      VISITS_TAKE_MAX: '500',
      SEED_DEMO: 'false',
      LOG_LEVEL: 'debug',
      PUBLIC_BASE_URL: 'https://results.example.com/',
    });
    expect(config).toMatchObject({ PORT: 8080, VISITS_TAKE_MAX: 500, SEED_DEMO: false, LOG_LEVEL: 'debug' });
    expect(config.usesPostgres).toBe(true);
    expect(config.baseUrl).toBe('https://results.example.com');
  });

  it('reads the optional settings, which have no default', () => {
    const config = loadConfig({
      IMAGE_STORAGE_DIR: '/srv/images',
      JWT_SIGNING_KEYS_FILE: '/run/secrets/keys',
      CORS_ORIGINS: 'https://a.example,https://b.example',
      PAGE_TOKEN_KEY: 'a-page-token-key-of-some-length',
    });
    expect(config).toMatchObject({
      IMAGE_STORAGE_DIR: '/srv/images',
      JWT_SIGNING_KEYS_FILE: '/run/secrets/keys',
      CORS_ORIGINS: 'https://a.example,https://b.example',
      PAGE_TOKEN_KEY: 'a-page-token-key-of-some-length',
    });
  });

  it('states the range of each kind of number in its message', () => {
    expect(problemsOf({ AUTH_CACHE_SECONDS: '31', WEBHOOKS_RETRY_HOURS: '0', IMAGE_STORAGE: 'cloud' })).toEqual([
      'AUTH_CACHE_SECONDS="31": expected an integer from 0 to 30',
      'IMAGE_STORAGE="cloud": expected database or filesystem',
      'WEBHOOKS_RETRY_HOURS="0": expected a number of hours greater than 0, at most 720',
    ]);
  });

  it('treats empty values as unset', () => {
    expect(loadConfig({ PORT: '', DATABASE_URL: '  ' }).PORT).toBe(3000);
  });

  it('names each wrong variable and what it expected, all at once', () => {
    const problems = problemsOf({ PORT: 'eighty', VISITS_TAKE_MAX: '0', SEED_DEMO: 'maybe', DEMO_DAYS: '0', DATABASE_URL: 'mysql://x' });
    expect(problems).toEqual(
      expect.arrayContaining([
        'PORT="eighty": expected an integer from 0 to 65535',
        'VISITS_TAKE_MAX="0": expected an integer from 1 to 100000',
        'SEED_DEMO="maybe": expected true or false (also 1 or 0, yes or no, on or off)',
        'DEMO_DAYS="0": expected an integer from 1 to 366',
        'DATABASE_URL="mysql://x": expected a postgres:// or postgresql:// URL',
      ]),
    );
    expect(problems).toHaveLength(5);
  });

  it('refuses a time zone that is not an IANA name', () => {
    expect(problemsOf({ RESULTS_TIMEZONE: 'Mars/Olympus' })).toEqual([
      'RESULTS_TIMEZONE="Mars/Olympus": expected an IANA time zone name such as Europe/London',
    ]);
  });

  it('refuses a CORS origin no browser Origin header matches: a path, a trailing slash, upper case, a default or padded port', () => {
    const expected = 'comma-separated http(s) origins as browsers send them, scheme://host[:port] in lower case, without a default port, a path or a trailing slash';
    for (const [value, hint] of [
      ['http://localhost:3399/', " ('http://localhost:3399/' is none)"],
      ['https://a.example,https://b.example/app', " ('https://b.example/app' is none)"],
      ['http://LocalHost:4211', " ('http://LocalHost:4211' is sent by browsers as 'http://localhost:4211')"],
      ['https://a.example,http://Partner.Example.com', " ('http://Partner.Example.com' is sent by browsers as 'http://partner.example.com')"],
      ['http://127.0.0.1:80', " ('http://127.0.0.1:80' is sent by browsers as 'http://127.0.0.1')"],
      ['https://a.example:443', " ('https://a.example:443' is sent by browsers as 'https://a.example')"],
      ['http://127.0.0.1:04210', " ('http://127.0.0.1:04210' is sent by browsers as 'http://127.0.0.1:4210')"],
      ['HTTP://localhost:4211', " ('HTTP://localhost:4211' is sent by browsers as 'http://localhost:4211')"],
      ['ftp://a.example', " ('ftp://a.example' is none)"],
    ] as const) {
      expect(problemsOf({ CORS_ORIGINS: value })).toEqual([`CORS_ORIGINS="${value}": expected ${expected}${hint}`]);
    }
    const origins = 'http://localhost:4211,https://partner.example.com,http://[::1]:8080';
    expect(loadConfig({ CORS_ORIGINS: origins }).CORS_ORIGINS).toBe(origins);
  });

  it('refuses an unknown log level', () => {
    expect(problemsOf({ LOG_LEVEL: 'loud' })[0]).toMatch(/^LOG_LEVEL="loud": expected one of fatal, error/);
  });

  it('shows no password of an origin in CORS_ORIGINS, in the value or in the hint', () => {
    const [problem] = problemsOf({ CORS_ORIGINS: 'https://partner:s3cret@app.example.com' });
    expect(problem).toMatch(/^CORS_ORIGINS="https:\/\/\[hidden\]@app\.example\.com": expected comma-separated http\(s\) origins/);
    expect(problem).not.toContain('s3cret');
  });

  it("refuses a DATABASE_URL whose sslmode node-postgres does not know, naming it and not the URL", () => {
    expect(problemsOf({ DATABASE_URL: 'postgres://u:pw1@db.example/results?sslmode=bogus' })).toEqual([
      'DATABASE_URL\'s sslmode="bogus": expected one of disable, prefer, require, verify-ca, verify-full, no-verify',
    ]);
    for (const mode of ['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']) {
      expect(loadConfig({ DATABASE_URL: `postgres://u:pw1@db.example/results?sslmode=${mode}` }).DATABASE_URL).toContain(`sslmode=${mode}`);
    }
  });

  it('refuses a DATABASE_DIRECT_URL that is not PostgreSQL, has an unknown sslmode, or stands without DATABASE_URL, showing no password', () => {
    expect(problemsOf({ DATABASE_URL: 'postgres://u@pgbouncer/results', DATABASE_DIRECT_URL: 'mysql://u:pw1@db/results' })).toEqual([
      'DATABASE_DIRECT_URL=[hidden]: expected a postgres:// or postgresql:// URL',
    ]);
    expect(problemsOf({ DATABASE_URL: 'postgres://u@pgbouncer/results', DATABASE_DIRECT_URL: 'postgres://u:pw1@db/results?sslmode=bogus' })).toEqual([
      'DATABASE_DIRECT_URL\'s sslmode="bogus": expected one of disable, prefer, require, verify-ca, verify-full, no-verify',
    ]);
    expect(problemsOf({ DATABASE_DIRECT_URL: 'postgres://u:pw1@db/results' })).toEqual([
      'DATABASE_DIRECT_URL is set without DATABASE_URL: set DATABASE_URL too (or neither, for the embedded database)',
    ]);
    expect(loadConfig({ DATABASE_URL: 'postgres://u@pgbouncer/results', DATABASE_DIRECT_URL: 'postgres://u@db/results' }).DATABASE_DIRECT_URL).toBe(
      'postgres://u@db/results',
    );
  });

  it('judges the sslmode node-postgres takes of one given twice: the last', () => {
    expect(problemsOf({ DATABASE_URL: 'postgres://u:pw1@db.example/results?sslmode=disable&sslmode=bogus' })).toEqual([
      'DATABASE_URL\'s sslmode="bogus": expected one of disable, prefer, require, verify-ca, verify-full, no-verify',
    ]);
    expect(loadConfig({ DATABASE_URL: 'postgres://u:pw1@db.example/results?sslmode=bogus&sslmode=require' }).DATABASE_URL).toContain('sslmode=require');
  });

  it('refuses a PGSSLMODE node-postgres does not know when the URL names no sslmode: it would connect without TLS', () => {
    expect(problemsOf({ DATABASE_URL: 'postgres://u:pw1@db.example/results', PGSSLMODE: 'requre' })).toEqual([
      'PGSSLMODE="requre": expected one of disable, prefer, require, verify-ca, verify-full, no-verify',
    ]);
    expect(loadConfig({ DATABASE_URL: 'postgres://u:pw1@db.example/results', PGSSLMODE: 'verify-full' }).DATABASE_URL).toBeDefined();
    // The URL's sslmode is the one node-postgres takes; without a database URL there is no PostgreSQL.
    expect(loadConfig({ DATABASE_URL: 'postgres://u:pw1@db.example/results?sslmode=require', PGSSLMODE: 'requre' }).DATABASE_URL).toBeDefined();
    expect(loadConfig({ PGSSLMODE: 'requre' }).DATABASE_URL).toBeUndefined();
  });

  it('refuses a PGSSLMODE with spaces around a mode: node-postgres reads it as it is, and would connect without TLS', () => {
    expect(problemsOf({ DATABASE_URL: 'postgres://u:pw1@db.example/results', PGSSLMODE: 'require ' })).toEqual([
      'PGSSLMODE="require ": expected one of disable, prefer, require, verify-ca, verify-full, no-verify',
    ]);
    // Blank, it is no mode at all, to node-postgres as to the service.
    expect(loadConfig({ DATABASE_URL: 'postgres://u:pw1@db.example/results', PGSSLMODE: ' ' }).DATABASE_URL).toBeDefined();
  });

  it('refuses URLs a client library cannot read, and a public address with a password, showing neither', () => {
    for (const [name, value] of [
      ['DATABASE_URL', 'postgres://u:pw1@127.0.0.1:notaport/db'],
      ['DATABASE_URL', 'postgres://u:pw1@[::1/db'],
      ['REDIS_URL', 'redis://:pw1@127.0.0.1:notaport'],
      ['PUBLIC_BASE_URL', 'https://user:pw1@x.example'],
      ['PUBLIC_BASE_URL', 'https://x.example:99999/'],
    ]) {
      const problems = problemsOf({ [name]: value });
      expect({ name, value, problems: problems.map((p) => p.split(': expected')[0]) }).toEqual({ name, value, problems: [`${name}=[hidden]`] });
      expect(problems.join()).not.toContain('pw1');
    }
    expect(loadConfig({ DATABASE_URL: 'postgres://u:pw@127.0.0.1:5432/db', REDIS_URL: 'redis://:pw@127.0.0.1:6379' }).REDIS_URL).toBe('redis://:pw@127.0.0.1:6379');
  });

  it('refuses a user name, password or path with a % that starts no escape, which the clients would throw on at start, saying how to write it', () => {
    const hint = 'whose user name, password and path are percent-encoded (a % that starts no escape written %25)';
    for (const [name, value, scheme] of [
      ['DATABASE_URL', 'postgres://u:s3cret%pw1@db.example/results', 'a postgres:// or postgresql:// URL'],
      ['DATABASE_URL', 'postgres://u%zz:pw1@db.example/results', 'a postgres:// or postgresql:// URL'],
      ['DATABASE_URL', 'postgres://u:pw1@db.example/res%ults', 'a postgres:// or postgresql:// URL'],
      ['REDIS_URL', 'redis://:p%zzpw1@127.0.0.1:6379', 'a redis:// or rediss:// URL'],
    ]) {
      expect({ value, problems: problemsOf({ [name]: value }) }).toEqual({ value, problems: [`${name}=[hidden]: expected ${scheme} ${hint}`] });
    }
    expect(loadConfig({ DATABASE_URL: 'postgres://u:s3cret%25pw@db.example/results' }).DATABASE_URL).toBe('postgres://u:s3cret%25pw@db.example/results');
  });

  it('refuses JWT_SIGNING_KEYS and JWT_SIGNING_KEYS_FILE set together, rather than passing over the file', () => {
    const key = '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n';
    expect(problemsOf({ JWT_SIGNING_KEYS: key, JWT_SIGNING_KEYS_FILE: '/run/secrets/keys' })).toEqual([
      'JWT_SIGNING_KEYS and JWT_SIGNING_KEYS_FILE are both set: set one of them',
    ]);
    expect(loadConfig({ JWT_SIGNING_KEYS: key, JWT_SIGNING_KEYS_FILE: ' ' }).JWT_SIGNING_KEYS).toBe(key);
  });

  it('refuses a PUBLIC_BASE_URL with a query or a fragment, which the token issuer and the links would carry', () => {
    for (const value of ['https://x.com?a=1', 'https://x.com/api?a=1', 'https://x.com#top', 'https://x.com/api/#']) {
      expect(problemsOf({ PUBLIC_BASE_URL: value })).toEqual([
        `PUBLIC_BASE_URL=${JSON.stringify(value)}: expected an absolute http(s) URL without a user name or password, a query or a fragment`,
      ]);
    }
    expect(loadConfig({ PUBLIC_BASE_URL: 'https://x.com/api/' }).baseUrl).toBe('https://x.com/api');
  });

  it('never shows the value of a key, however short, nor of a URL that has or may have a password in it', () => {
    expect(problemsOf({ API_KEY_HASH_KEY: 'hunter2pw', PAGE_TOKEN_KEY: 'short', JWT_SIGNING_KEYS: 'hunter2pw' })).toEqual([
      'API_KEY_HASH_KEY=[hidden]: expected a string of at least 16 characters',
      'JWT_SIGNING_KEYS=[hidden]: expected one or more PKCS#8 PEM private keys',
      'PAGE_TOKEN_KEY=[hidden]: expected a string of at least 16 characters',
    ]);
    for (const value of ['a key of sixteen+,short', 'a key of sixteen+,', ',a key of sixteen+', 'a key of sixteen+,,a key of sixteen+', 'a key of sixteen+\n\na key of sixteen+', 'a key of sixteen+\nshort', 'short']) {
      expect(problemsOf({ PAGE_TOKEN_ACCEPTED_KEYS: value })).toEqual([
        'PAGE_TOKEN_ACCEPTED_KEYS=[hidden]: expected strings of at least 16 characters each, separated by commas or line breaks',
      ]);
    }
    expect(loadConfig({ PAGE_TOKEN_ACCEPTED_KEYS: 'a key of sixteen+ , with spaces inside it' }).pageTokenAcceptedKeys).toEqual(['a key of sixteen+', 'with spaces inside it']);
    // A Secret's file of one key a line (a last line break is dropped with the value's spaces).
    expect(loadConfig({ PAGE_TOKEN_ACCEPTED_KEYS: 'a key of sixteen+\r\nanother key of 16+\na third key of 16+, and a fourth one \n' }).pageTokenAcceptedKeys).toEqual([
      'a key of sixteen+',
      'another key of 16+',
      'a third key of 16+',
      'and a fourth one',
    ]);
    for (const value of ['redis://:hunter2pw@host', 'redis:/:hunter2pw', 'redis//:hunter2pw@host', 'http://u:hunter2pw@host']) {
      expect(problemsOf({ REDIS_URL: `x${value}` })).toEqual(['REDIS_URL=[hidden]: expected a redis:// or rediss:// URL']);
      expect(problemsOf({ DATABASE_URL: value })).toEqual(['DATABASE_URL=[hidden]: expected a postgres:// or postgresql:// URL']);
    }
    expect(problemsOf({ PUBLIC_BASE_URL: 'https://u:hunter2pw@x.com?a=1' })).toEqual([
      'PUBLIC_BASE_URL=[hidden]: expected an absolute http(s) URL without a user name or password, a query or a fragment',
    ]);
    // A URL with a host and no user or password is shown, so that a typo in it can be seen.
    expect(problemsOf({ REDIS_URL: 'http://cache:6379' })).toEqual(['REDIS_URL="http://cache:6379": expected a redis:// or rediss:// URL']);
  });
});

describe('usableFolder', () => {
  it('makes the folder and those above it, and gives its absolute path', () => {
    const root = mkdtempSync(join(tmpdir(), 'folder-'));
    expect(usableFolder('DATA_DIR', join(root, 'a', 'b'))).toBe(join(root, 'a', 'b'));
    expect(statSync(join(root, 'a', 'b')).isDirectory()).toBe(true);
  });

  it('refuses a folder that cannot be made, naming the setting, with the error of the file system as its cause', () => {
    const file = join(mkdtempSync(join(tmpdir(), 'folder-')), 'a-file');
    writeFileSync(file, '');
    for (const [folder, code] of [
      [join(file, 'data'), 'ENOTDIR'],
      [file, 'EEXIST'],
      // mkdir says ENOENT under a parent that exists: Node's recursive mkdirSync never returned.
      ['/proc/results-service-folder', 'ENOENT'],
    ]) {
      let refusal: unknown;
      try {
        usableFolder('IMAGE_STORAGE_DIR', folder);
      } catch (error) {
        refusal = error;
      }
      expect(refusal).toBeInstanceOf(ConfigError);
      expect((refusal as ConfigError).problems).toEqual([expect.stringMatching(new RegExp(`^IMAGE_STORAGE_DIR: cannot use ${folder}: ${code}: `))]);
      expect((refusal as ConfigError).cause).toMatchObject({ code, path: folder });
    }
  });
});

describe('databaseKindFromEnvironment', () => {
  it('is postgres when DATABASE_URL is set, and sqlite when it is unset or blank', () => {
    expect(databaseKindFromEnvironment({ DATABASE_URL: 'postgres://u@db/results' })).toBe('postgres');
    expect(databaseKindFromEnvironment({})).toBe('sqlite');
    expect(databaseKindFromEnvironment({ DATABASE_URL: '  ' })).toBe('sqlite');
  });
});

describe("the README's table of settings", () => {
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  /** Name → the Accepts cell of its row. */
  const rows = new Map(
    [...readme.matchAll(/^\| `([A-Z][A-Z0-9_]+)` \| [^|]* \| ([^|]*) \| [^|]* \|$/gm)].map(([, name, accepts]) => [name, accepts.trim()] as const),
  );
  /** What a value of the wrong kind is refused with, after "expected": the text the table must give. */
  const expected = (name: string, value: string): string | undefined => {
    try {
      loadConfig({ [name]: value });
      return undefined;
    } catch (error) {
      if (!(error instanceof ConfigError)) throw error;
      return error.problems.find((p) => p.startsWith(`${name}=`))?.replace(/^[^:]*: expected /, '');
    }
  };

  it('has a row for every setting, and each says what the setting accepts as a wrong value is told', () => {
    const settings = Object.keys(loadConfig({})).concat('DATABASE_URL', 'REDIS_URL', 'PUBLIC_BASE_URL', 'CORS_ORIGINS', 'JWT_SIGNING_KEYS', 'JWT_SIGNING_KEYS_FILE', 'PAGE_TOKEN_KEY');
    const named = [...new Set(settings.filter((key) => /^[A-Z][A-Z0-9_]+$/.test(key)))];
    expect(named.filter((name) => !rows.has(name))).toEqual([]);
    let checked = 0;
    for (const name of named) {
      // A value no setting of a number, a word, a URL or an identifier takes.
      const told = name === 'JWT_SIGNING_KEYS_FILE' ? undefined : expected(name, '\u0001 x');
      if (told === undefined) continue;
      checked++;
      // The origins' message goes on to name the value that is wrong.
      expect([name, told.startsWith(rows.get(name) ?? '-')]).toEqual([name, true]);
    }
    expect(checked).toBeGreaterThan(40);
  });
});
