import 'reflect-metadata';
import { accessSync, constants, existsSync, mkdirSync, statSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { plainToInstance } from 'class-transformer';
import { IsOptional, validateSync, type ValidationError } from 'class-validator';
import { BooleanSetting, DecimalSetting, IntSetting, OneOfSetting, OriginsSetting, TextSetting, UrlSetting } from './setting-decorators.js';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function isIanaTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * The default of API_KEY_HASH_KEY, for the embedded demo: it is public (it is in this file), so
 * whoever knows it can open and forge page tokens and work out ETags. A start with it warns.
 */
export const BUILT_IN_API_KEY_HASH_KEY = 'results-service-default-api-key-hash-key';

/** What separates the keys of PAGE_TOKEN_ACCEPTED_KEYS: a comma, or a line break. */
const ACCEPTED_KEYS_SEPARATOR = /,|\r?\n/;
/** A key of PAGE_TOKEN_ACCEPTED_KEYS: at least 16 characters, spaces or tabs around it dropped. */
const ACCEPTED_KEY = '[ \\t]*[^,\\s][^,\\r\\n]{14,}[^,\\s][ \\t]*';
/** PAGE_TOKEN_ACCEPTED_KEYS: keys separated by commas or line breaks, none empty. */
const ACCEPTED_KEYS = new RegExp(`^${ACCEPTED_KEY}((,|\\r?\\n)${ACCEPTED_KEY})*$`);

/**
 * Every setting the service reads from its environment. Validated once at boot
 * (see {@link loadConfig}); no code outside src/config reads `process.env`.
 */
export class AppConfig {
  /** TCP port of the public HTTP listener. */
  @IntSetting(0, 65535)
  PORT = 3000;

  /** Interface to bind to. */
  @TextSetting('a host name or address')
  HOST = '0.0.0.0';

  /** PostgreSQL connection URL; unset means the embedded SQLite file under DATA_DIR. */
  @IsOptional()
  @UrlSetting(/^postgres(ql)?:\/\/.+/, 'a postgres:// or postgresql:// URL')
  DATABASE_URL?: string;

  /**
   * PostgreSQL itself, for the connection a pooler in transaction mode cannot carry (the
   * data-version listener's, whose LISTEN needs a session of its own); unset: DATABASE_URL.
   */
  @IsOptional()
  @UrlSetting(/^postgres(ql)?:\/\/.+/, 'a postgres:// or postgresql:// URL')
  DATABASE_DIRECT_URL?: string;

  /** PostgreSQL schema holding the service's tables. */
  @TextSetting('a lower-case SQL identifier', /^[a-z_][a-z0-9_]{0,62}$/)
  DATABASE_SCHEMA = 'public';

  /** PostgreSQL pool size per process. */
  @IntSetting(1, 200)
  DATABASE_POOL_SIZE = 10;

  /** Folder for the embedded database, generated keys and demo credentials. */
  @TextSetting('a folder path', /\S/)
  DATA_DIR = './data';

  /** Redis URL for shared rate-limit counters; unset keeps counters in the process. */
  @IsOptional()
  @UrlSetting(/^rediss?:\/\/.+/, 'a redis:// or rediss:// URL')
  REDIS_URL?: string;

  /** IANA time zone in which "today" is judged for visit date rules. */
  @TextSetting('an IANA time zone name such as Europe/London', /^[A-Za-z_+\-/0-9]+$/)
  RESULTS_TIMEZONE = 'Europe/London';

  /** Largest Take accepted by the visits endpoints. */
  @IntSetting(1, 100000)
  VISITS_TAKE_MAX = 1000;

  /** Largest FromDate..ToDate range, in days, accepted by the visits endpoints. */
  @IntSetting(1, 3660)
  VISITS_MAX_RANGE_DAYS = 31;

  /** How far back, in days, a change feed's first call ('Since') may start. */
  @IntSetting(1, 3660)
  CHANGES_RETENTION_DAYS = 90;

  /** Log level of the JSON logs. */
  @OneOfSetting(LOG_LEVELS)
  LOG_LEVEL: (typeof LOG_LEVELS)[number] = 'info';

  /** Seed the demo data set into an empty database at start. */
  @BooleanSetting()
  SEED_DEMO = true;

  /** Days of visits in the demo data set (the days before today), seeded at start or loaded by `demo`. */
  @IntSetting(1, 366)
  DEMO_DAYS = 90;

  /** Run pending migrations at start (the embedded default); production runs them as a Job. */
  @BooleanSetting()
  MIGRATIONS_RUN = true;

  /**
   * Public base URL of the service, used as token issuer and in links. Defaults to http://localhost:PORT.
   * No query or fragment: the paths of the token endpoint and of the links are put after it.
   */
  @IsOptional()
  @UrlSetting(/^https?:\/\/[^\s/?#]+(\/[^\s?#]*)?$/, 'an absolute http(s) URL without a user name or password, a query or a fragment', { userinfo: false })
  PUBLIC_BASE_URL?: string;

  /** Largest accepted dish image, in bytes. */
  @IntSetting(1024, 104857600)
  IMAGE_MAX_BYTES = 5 * 1024 * 1024;

  /** Largest accepted dish image, in pixels (width x height). */
  @IntSetting(1, 268402689)
  IMAGE_MAX_PIXELS = 40_000_000;

  /** Key of the HMAC that API keys are stored under. Set a long random value in production. */
  @TextSetting('a string of at least 16 characters', /^.{16,}$/)
  API_KEY_HASH_KEY = BUILT_IN_API_KEY_HASH_KEY;

  /**
   * Token signing keys as PKCS#8 PEM (one or more, concatenated; the first signs, all verify).
   * Unset: keys are generated and kept in the database (in the data folder when embedded),
   * rotated with `signing-keys rotate`.
   */
  @IsOptional()
  @TextSetting('one or more PKCS#8 PEM private keys', /-----BEGIN PRIVATE KEY-----/)
  JWT_SIGNING_KEYS?: string;

  /** A file (a mounted secret) holding JWT_SIGNING_KEYS. */
  @IsOptional()
  @TextSetting('a file path')
  JWT_SIGNING_KEYS_FILE?: string;

  /** How long a looked-up API key or credential is trusted before it is read again. */
  @IntSetting(0, 30)
  AUTH_CACHE_SECONDS = 10;

  /** Failed token requests allowed per client id in TOKEN_FAILURES_WINDOW_SECONDS. */
  @IntSetting(1, 10000)
  TOKEN_FAILURES_MAX = 10;

  /** The window, in seconds, in which TOKEN_FAILURES_MAX failed token requests are counted. */
  @IntSetting(1, 86400)
  TOKEN_FAILURES_WINDOW_SECONDS = 900;

  /** Menus or dishes per page of GET /menus and GET /menus/dishes. */
  @IntSetting(1, 1000)
  MENUS_PAGE_SIZE = 50;

  /** Key that signs page tokens; defaults to one derived from API_KEY_HASH_KEY. */
  @IsOptional()
  @TextSetting('a string of at least 16 characters', /^.{16,}$/)
  PAGE_TOKEN_KEY?: string;

  /**
   * Keys whose page tokens are opened too (separated by commas or line breaks, as a Secret's
   * file of one key a line gives them), besides PAGE_TOKEN_KEY's: for changing that key
   * replica by replica, with no partner's token refused (README, "Key rotation and backup").
   */
  @IsOptional()
  @TextSetting('strings of at least 16 characters each, separated by commas or line breaks', ACCEPTED_KEYS)
  PAGE_TOKEN_ACCEPTED_KEYS?: string;

  /** Where dish images are kept: in the database (works for any number of replicas) or in a folder. */
  @OneOfSetting(['database', 'filesystem'], 'database or filesystem')
  IMAGE_STORAGE: 'database' | 'filesystem' = 'database';

  /** The folder of IMAGE_STORAGE=filesystem (shared by every replica); default DATA_DIR/images. */
  @IsOptional()
  @TextSetting('a folder path')
  IMAGE_STORAGE_DIR?: string;

  /** Requests per minute per API key (fixed window); failed requests count too. */
  @IntSetting(1, 1000000)
  RATE_LIMIT_PER_MINUTE = 60;

  /** Token requests per minute per client id. */
  @IntSetting(1, 1000000)
  TOKEN_RATE_LIMIT_PER_MINUTE = 10;

  /**
   * How long a Redis command may go unanswered before the count is made in the process instead
   * (and Redis is left alone for a few seconds: see RedisGate).
   */
  @IntSetting(50, 60000)
  REDIS_COMMAND_TIMEOUT_MS = 1000;

  /** Prefix of the service's keys in Redis (several services or tests may share one Redis). */
  @TextSetting('letters, digits, : _ or -', /^[A-Za-z0-9:_-]{1,64}$/)
  REDIS_KEY_PREFIX = 'results:';

  /** Port of the Prometheus metrics listener (kept off the public port); 0 turns it off. */
  @IntSetting(0, 65535)
  METRICS_PORT = 9464;

  /** Express "trust proxy": hops of proxies in front (1 for one ingress), or false. */
  @TextSetting('false, true, a number of hops, or loopback', /^(false|true|\d{1,2}|loopback|uniquelocal|linklocal)$/)
  TRUST_PROXY = 'false';

  /**
   * Origins allowed to call the API from a browser, comma-separated; empty: CORS off. An
   * origin has no path, not even a trailing slash: a browser's Origin header never matches one.
   */
  @IsOptional()
  @OriginsSetting()
  CORS_ORIGINS?: string;

  /**
   * How often, in seconds, the process looks whether it has gone quiet holding more buffer
   * memory than after its last full garbage collection (dead page bodies), and if so runs one
   * (see IdleCollector); 0 never does.
   */
  @IntSetting(0, 3600)
  IDLE_GC_SECONDS = 5;

  /** How long, after SIGTERM, in-flight requests may take to finish. */
  @IntSetting(0, 600)
  SHUTDOWN_GRACE_SECONDS = 25;

  /** Longest a database query may take before the request fails with a 503. */
  @IntSetting(100, 600000)
  DATABASE_QUERY_TIMEOUT_MS = 10000;

  /**
   * Memory for rendered visit pages, in MiB per process, and a quarter of that again for their
   * compressed forms; 0 turns both off. Sized for the 200 MB idle target: a replica without the
   * cache idled at 126 to 173 MB after the benchmark's runs, and the cache holds up to 1.25
   * times this on top, as long as its pages are asked for. Raise it with the pod's memory
   * limit (docs/decisions.md, "Visits").
   */
  @IntSetting(0, 4096)
  VISITS_CACHE_MB = 32;

  /**
   * Memory for visit and change-feed page bodies being written, in MiB per process: past it,
   * a page request waits before its page is read. Bounds a replica's memory when many
   * partners pull large pages at once; 0 sets no bound.
   */
  @IntSetting(0, 4096)
  PAGES_IN_FLIGHT_MB = 64;

  /**
   * How long a page request waits for room among the page bodies in flight before it is
   * answered 503 with Retry-After, in seconds.
   */
  @IntSetting(1, 300)
  PAGES_WAIT_SECONDS = 10;

  /**
   * How long a visit or change-feed page may take no bytes at all from the connection it is
   * written to before that connection is closed, in seconds: a client that stops reading
   * would otherwise keep its page's body in flight (and its room in PAGES_IN_FLIGHT_MB) for
   * as long as it keeps the connection.
   */
  @IntSetting(1, 3600)
  PAGES_STALL_SECONDS = 30;

  /**
   * Memory for dish upload bodies being received and held, in MiB per process: an upload
   * reserves its declared length (or the largest form, when it declares none) before its body
   * is read, and is answered 503 with Retry-After when that does not fit; one credential's
   * uploads take at most half of it. 0 sets no bound.
   */
  @IntSetting(0, 4096)
  UPLOADS_IN_FLIGHT_MB = 64;

  /**
   * The images of one `menus import` file together, in MiB: a file is written all at once, so
   * every image it names is held until then (120 dishes of 3.6 MB each took the command to
   * 620 MB). A file past it is refused, naming the dish where it was passed: split it.
   */
  @IntSetting(1, 4096)
  MENUS_IMPORT_IMAGES_MB = 256;

  /**
   * How long an upload's body may bring no bytes at all before its connection is closed, in
   * seconds: a client that stops sending would otherwise hold its room in UPLOADS_IN_FLIGHT_MB
   * for as long as the server's request timeout (300 s).
   */
  @IntSetting(1, 3600)
  UPLOADS_STALL_SECONDS = 30;

  /**
   * The least an upload's body must bring, in KiB a second over each UPLOADS_STALL_SECONDS
   * (or the rest of its declared length, when that is less), before its connection is closed:
   * a client sending a byte now and then would otherwise hold its room in UPLOADS_IN_FLIGHT_MB
   * until the server's request timeout (300 s). 0: only a body that brings nothing is dropped.
   */
  @IntSetting(0, 1048576)
  UPLOADS_MIN_KB_PER_SECOND = 8;

  /** Changes of one client within this many milliseconds go out as one webhook event. */
  @IntSetting(0, 600000)
  WEBHOOKS_COALESCE_MS = 5000;

  /** How often each process looks for webhook events that are due. */
  @IntSetting(10, 60000)
  WEBHOOKS_POLL_MS = 1000;

  /** How long a receiver has to answer a webhook with a 2xx; a delivery's claim lasts twice this. */
  @IntSetting(100, 60000)
  WEBHOOKS_TIMEOUT_MS = 10000;

  /** The first retry's delay; each further one doubles it (with jitter), up to an hour. */
  @IntSetting(10, 3600000)
  WEBHOOKS_BACKOFF_BASE_MS = 10000;

  /** How long after its first change an event is retried before it is given up and its endpoint marked failing. */
  @DecimalSetting(0.0001, 720, 'a number of hours greater than 0, at most 720')
  WEBHOOKS_RETRY_HOURS = 24;

  /** Webhook requests in flight per process, over all endpoints. */
  @IntSetting(1, 200)
  WEBHOOKS_CONCURRENCY = 10;

  /** Webhook requests in flight per process to one endpoint, so a slow receiver holds only these. */
  @IntSetting(1, 50)
  WEBHOOKS_CONCURRENCY_PER_ENDPOINT = 2;

  /** Allow plain-http webhook URLs on a loopback address (development and tests only). */
  @BooleanSetting()
  WEBHOOKS_ALLOW_HTTP_LOOPBACK = false;

  /** PAGE_TOKEN_ACCEPTED_KEYS, each without the spaces around it. */
  get pageTokenAcceptedKeys(): string[] {
    return this.PAGE_TOKEN_ACCEPTED_KEYS?.split(ACCEPTED_KEYS_SEPARATOR).map((key) => key.trim()) ?? [];
  }

  get usesPostgres(): boolean {
    return this.DATABASE_URL !== undefined;
  }

  get baseUrl(): string {
    return (this.PUBLIC_BASE_URL ?? `http://localhost:${this.PORT}`).replace(/\/+$/, '');
  }
}

export class ConfigError extends Error {
  /** `cause`: the file system's error, when a folder a setting names cannot be used (see {@link usableFolder}). */
  constructor(
    readonly problems: string[],
    options?: { cause: unknown },
  ) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`, options);
    this.name = 'ConfigError';
  }
}

/**
 * The names of the settings: the fields of {@link AppConfig}. Class fields are defined on the
 * instance even without an initializer (ES2022 semantics, the default for the ES2023 target),
 * so the optional settings are listed here too and the class is the only list to keep.
 */
const SETTINGS: readonly string[] = Object.keys(new AppConfig());

/** Settings whose values never appear in a message: keys, however short or mistyped. */
const SECRETS = new Set(['JWT_SIGNING_KEYS', 'API_KEY_HASH_KEY', 'PAGE_TOKEN_KEY', 'PAGE_TOKEN_ACCEPTED_KEYS']);

/** URL settings: a value may hold a password, in its userinfo or wherever a typo put it. */
const URLS = new Set(['DATABASE_URL', 'DATABASE_DIRECT_URL', 'REDIS_URL', 'PUBLIC_BASE_URL']);

/** The user name and password of a URL, wherever one stands in a message. */
const USERINFO = /(:\/\/)[^\s/@'"]*@/g;

/** Whether `value` reads as a URL with a host and no user name or password, which a message may show. */
function isPlainUrl(value: string): boolean {
  try {
    const url = new URL(value);
    return url.host !== '' && url.username === '' && url.password === '';
  } catch {
    return false;
  }
}

/** A setting's value as a message shows it: secrets, and URLs that are not plainly one, as `[hidden]`. */
function shown(setting: string, value: string): string {
  if (SECRETS.has(setting) || (URLS.has(setting) && !isPlainUrl(value))) return '[hidden]';
  return JSON.stringify(value);
}

function describe(errors: ValidationError[], env: Record<string, string | undefined>): string[] {
  return errors.map((error) => {
    const expected = Object.values(error.constraints ?? {})[0] ?? 'a valid value';
    // A user name and password in any URL of the value (CORS_ORIGINS, say) are not repeated, in the value or in the hint.
    return `${error.property}=${shown(error.property, env[error.property] ?? '')}: expected ${expected}`.replace(USERINFO, '$1[hidden]@');
  });
}

/** The sslmode values node-postgres reads in a connection URL. */
const SSL_MODES = new Set(['disable', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify']);

/**
 * The sslmode a PostgreSQL URL names as node-postgres reads it: the last one given, as it takes
 * the last of a repeated parameter; undefined for none (or a URL the URL check refuses).
 */
function postgresSslMode(url: string | undefined): string | undefined {
  if (url === undefined || !URL.canParse(url)) return undefined;
  return new URL(url).searchParams.getAll('sslmode').at(-1);
}

/**
 * Reads and validates the environment. Empty strings count as unset, so that a blank
 * line in a manifest falls back to the default instead of failing obscurely.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const raw: Record<string, unknown> = {};
  for (const key of SETTINGS) {
    const value = env[key];
    if (value !== undefined && value.trim() !== '') raw[key] = key === 'JWT_SIGNING_KEYS' ? value : value.trim();
  }
  const config = plainToInstance(AppConfig, raw, { exposeDefaultValues: true });
  const errors = validateSync(config, { stopAtFirstError: true });
  const problems = describe(errors, env);
  if (!isIanaTimeZone(config.RESULTS_TIMEZONE) && !problems.some((p) => p.startsWith('RESULTS_TIMEZONE='))) {
    problems.push(
      `RESULTS_TIMEZONE=${JSON.stringify(env.RESULTS_TIMEZONE ?? '')}: expected an IANA time zone name such as Europe/London`,
    );
  }
  // node-postgres passes over an sslmode it does not know, and the start then failed on TLS with a stack.
  const sslmode = postgresSslMode(config.DATABASE_URL);
  if (sslmode !== undefined && !SSL_MODES.has(sslmode)) {
    problems.push(`DATABASE_URL's sslmode=${JSON.stringify(sslmode)}: expected one of ${[...SSL_MODES].join(', ')}`);
  }
  // PGSSLMODE is node-postgres's when the URL names no sslmode; one it does not know means no TLS at all, said by nobody.
  // It reads the variable as it is, spaces included: 'require ' (an env file's trailing space) is one it does not know.
  const envSslMode = env.PGSSLMODE;
  if (config.DATABASE_URL !== undefined && sslmode === undefined && envSslMode?.trim() && !SSL_MODES.has(envSslMode)) {
    problems.push(`PGSSLMODE=${JSON.stringify(envSslMode)}: expected one of ${[...SSL_MODES].join(', ')}`);
  }
  // The file would be passed over without a word, and the keys an operator mounted in it never used.
  if (raw.JWT_SIGNING_KEYS !== undefined && raw.JWT_SIGNING_KEYS_FILE !== undefined) {
    problems.push('JWT_SIGNING_KEYS and JWT_SIGNING_KEYS_FILE are both set: set one of them');
  }
  // Without DATABASE_URL the database is the embedded one: a direct URL alone would be passed over.
  if (config.DATABASE_DIRECT_URL !== undefined && config.DATABASE_URL === undefined) {
    problems.push('DATABASE_DIRECT_URL is set without DATABASE_URL: set DATABASE_URL too (or neither, for the embedded database)');
  }
  const directSslMode = postgresSslMode(config.DATABASE_DIRECT_URL);
  if (directSslMode !== undefined && !SSL_MODES.has(directSslMode)) {
    problems.push(`DATABASE_DIRECT_URL's sslmode=${JSON.stringify(directSslMode)}: expected one of ${[...SSL_MODES].join(', ')}`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}

/**
 * Makes the folder a setting names (and those above it) and checks that this process may
 * write in it: done at start, so that a folder that cannot be used stops the process naming
 * the setting, rather than failing every write afterwards. Gives the folder's absolute path.
 */
export function usableFolder(setting: string, folder: string): string {
  const dir = resolve(folder);
  try {
    makeFolders(dir);
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch (error) {
    throw new ConfigError([`${setting}: cannot use ${dir}: ${(error as Error).message}`], { cause: error });
  }
  return dir;
}

/**
 * `mkdir -p`, a level at a time: Node's recursive mkdirSync tries again for ever where mkdir
 * says ENOENT under a parent that exists (a folder in /proc), and the start hung.
 */
function makeFolders(dir: string): void {
  const parent = dirname(dir);
  if (parent !== dir && !existsSync(parent)) makeFolders(parent);
  try {
    mkdirSync(dir);
  } catch (error) {
    // Already there: fine when it is a folder (made before, or by another process meanwhile).
    if ((error as NodeJS.ErrnoException).code === 'EEXIST' && statSync(dir).isDirectory()) return;
    throw error;
  }
}

/**
 * Which database the process uses, judged like {@link loadConfig} judges DATABASE_URL (blank is
 * unset). For what must be known before the configuration is loaded: the column types of
 * the entities are decided when their modules load.
 */
export function databaseKindFromEnvironment(env: Record<string, string | undefined> = process.env): 'postgres' | 'sqlite' {
  return env.DATABASE_URL?.trim() ? 'postgres' : 'sqlite';
}
