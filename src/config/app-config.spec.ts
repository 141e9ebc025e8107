import { ConfigError, databaseKindFromEnvironment, loadConfig } from './app-config.js';

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
    const problems = problemsOf({ PORT: 'eighty', VISITS_TAKE_MAX: '0', SEED_DEMO: 'maybe', DATABASE_URL: 'mysql://x' });
    expect(problems).toEqual(
      expect.arrayContaining([
        'PORT="eighty": expected an integer from 0 to 65535',
        'VISITS_TAKE_MAX="0": expected an integer from 1 to 100000',
        'SEED_DEMO="maybe": expected true or false',
        'DATABASE_URL="mysql://x": expected a postgres:// or postgresql:// URL',
      ]),
    );
    expect(problems).toHaveLength(4);
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
});

describe('databaseKindFromEnvironment', () => {
  it('is postgres when DATABASE_URL is set, and sqlite when it is unset or blank', () => {
    expect(databaseKindFromEnvironment({ DATABASE_URL: 'postgres://u@db/results' })).toBe('postgres');
    expect(databaseKindFromEnvironment({})).toBe('sqlite');
    expect(databaseKindFromEnvironment({ DATABASE_URL: '  ' })).toBe('sqlite');
  });
});
