import 'reflect-metadata';
import { plainToInstance, Transform } from 'class-transformer';
import {
  IsBoolean,
  IsIn,
  IsInt,
  IsNumber,
  IsOptional,
  IsString,
  Matches,
  Max,
  Min,
  validateSync,
  type ValidationError,
} from 'class-validator';

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

function toInt({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
}

function toNumber({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
}

function toBool({ value }: { value: unknown }): unknown {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return value;
}

function isIanaTimeZone(zone: string): boolean {
  try {
    new Intl.DateTimeFormat('en-GB', { timeZone: zone });
    return true;
  } catch {
    return false;
  }
}

/**
 * Every setting the service reads from its environment. Validated once at boot
 * (see {@link loadConfig}); nothing else in the code reads `process.env`.
 */
export class AppConfig {
  /** TCP port of the public HTTP listener. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 0 to 65535' })
  @Min(0, { message: 'an integer from 0 to 65535' })
  @Max(65535, { message: 'an integer from 0 to 65535' })
  PORT = 3000;

  /** Interface to bind to. */
  @IsString({ message: 'a host name or address' })
  HOST = '0.0.0.0';

  /** PostgreSQL connection URL; unset means the embedded SQLite file under DATA_DIR. */
  @IsOptional()
  @Matches(/^postgres(ql)?:\/\/.+/, { message: 'a postgres:// or postgresql:// URL' })
  DATABASE_URL?: string;

  /** PostgreSQL schema holding the service's tables. */
  @Matches(/^[a-z_][a-z0-9_]{0,62}$/, { message: 'a lower-case SQL identifier' })
  DATABASE_SCHEMA = 'public';

  /** PostgreSQL pool size per process. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 200' })
  @Min(1, { message: 'an integer from 1 to 200' })
  @Max(200, { message: 'an integer from 1 to 200' })
  DATABASE_POOL_SIZE = 10;

  /** Folder for the embedded database, generated keys and demo credentials. */
  @IsString({ message: 'a folder path' })
  @Matches(/\S/, { message: 'a folder path' })
  DATA_DIR = './data';

  /** Redis URL for shared rate-limit counters; unset keeps counters in the process. */
  @IsOptional()
  @Matches(/^rediss?:\/\/.+/, { message: 'a redis:// or rediss:// URL' })
  REDIS_URL?: string;

  /** IANA time zone in which "today" is judged for visit date rules. */
  @IsString({ message: 'an IANA time zone name such as Europe/London' })
  @Matches(/^[A-Za-z_+\-/0-9]+$/, { message: 'an IANA time zone name such as Europe/London' })
  RESULTS_TIMEZONE = 'Europe/London';

  /** Largest Take accepted by the visits endpoints. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 100000' })
  @Min(1, { message: 'an integer from 1 to 100000' })
  @Max(100000, { message: 'an integer from 1 to 100000' })
  VISITS_TAKE_MAX = 1000;

  /** Largest FromDate..ToDate range, in days, accepted by the visits endpoints. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 3660' })
  @Min(1, { message: 'an integer from 1 to 3660' })
  @Max(3660, { message: 'an integer from 1 to 3660' })
  VISITS_MAX_RANGE_DAYS = 31;

  /** How far back, in days, a change feed's first call ('Since') may start. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 3660' })
  @Min(1, { message: 'an integer from 1 to 3660' })
  @Max(3660, { message: 'an integer from 1 to 3660' })
  CHANGES_RETENTION_DAYS = 90;

  /** Log level of the JSON logs. */
  @IsIn(LOG_LEVELS, { message: `one of ${LOG_LEVELS.join(', ')}` })
  LOG_LEVEL: (typeof LOG_LEVELS)[number] = 'info';

  /** Seed the demo data set into an empty database at start. */
  @Transform(toBool)
  @IsBoolean({ message: 'true or false' })
  SEED_DEMO = true;

  /** Run pending migrations at start (the embedded default); production runs them as a Job. */
  @Transform(toBool)
  @IsBoolean({ message: 'true or false' })
  MIGRATIONS_RUN = true;

  /** Public base URL of the service, used as token issuer and in links. Defaults to http://localhost:PORT. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s/]+(\/[^\s]*)?$/, { message: 'an absolute http(s) URL' })
  PUBLIC_BASE_URL?: string;

  /** Largest accepted dish image, in bytes. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1024 to 104857600' })
  @Min(1024, { message: 'an integer from 1024 to 104857600' })
  @Max(104857600, { message: 'an integer from 1024 to 104857600' })
  IMAGE_MAX_BYTES = 5 * 1024 * 1024;

  /** Largest accepted dish image, in pixels (width x height). */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 268402689' })
  @Min(1, { message: 'an integer from 1 to 268402689' })
  @Max(268402689, { message: 'an integer from 1 to 268402689' })
  IMAGE_MAX_PIXELS = 40_000_000;

  /** Key of the HMAC that API keys are stored under. Set a long random value in production. */
  @IsString({ message: 'a string of at least 16 characters' })
  @Matches(/^.{16,}$/, { message: 'a string of at least 16 characters' })
  API_KEY_HASH_KEY = 'results-service-default-api-key-hash-key';

  /**
   * Token signing keys as PKCS#8 PEM (one or more, concatenated; the first signs, all verify).
   * Unset: keys are generated and kept in the database (in the data folder when embedded),
   * rotated with `signing-keys rotate`.
   */
  @IsOptional()
  @Matches(/-----BEGIN PRIVATE KEY-----/, { message: 'one or more PKCS#8 PEM private keys' })
  JWT_SIGNING_KEYS?: string;

  /** A file (a mounted secret) holding JWT_SIGNING_KEYS. */
  @IsOptional()
  @IsString({ message: 'a file path' })
  JWT_SIGNING_KEYS_FILE?: string;

  /** How long a looked-up API key or credential is trusted before it is read again. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 0 to 30' })
  @Min(0, { message: 'an integer from 0 to 30' })
  @Max(30, { message: 'an integer from 0 to 30' })
  AUTH_CACHE_SECONDS = 10;

  /** Failed token requests allowed per client id in TOKEN_FAILURES_WINDOW_SECONDS. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 10000' })
  @Min(1, { message: 'an integer from 1 to 10000' })
  @Max(10000, { message: 'an integer from 1 to 10000' })
  TOKEN_FAILURES_MAX = 10;

  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 86400' })
  @Min(1, { message: 'an integer from 1 to 86400' })
  @Max(86400, { message: 'an integer from 1 to 86400' })
  TOKEN_FAILURES_WINDOW_SECONDS = 900;

  /** Menus or dishes per page of GET /menus and GET /menus/dishes. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 1000' })
  @Min(1, { message: 'an integer from 1 to 1000' })
  @Max(1000, { message: 'an integer from 1 to 1000' })
  MENUS_PAGE_SIZE = 50;

  /** Key that signs page tokens; defaults to one derived from API_KEY_HASH_KEY. */
  @IsOptional()
  @Matches(/^.{16,}$/, { message: 'a string of at least 16 characters' })
  PAGE_TOKEN_KEY?: string;

  /** Where dish images are kept: in the database (works for any number of replicas) or in a folder. */
  @IsIn(['database', 'filesystem'], { message: 'database or filesystem' })
  IMAGE_STORAGE: 'database' | 'filesystem' = 'database';

  /** The folder of IMAGE_STORAGE=filesystem (shared by every replica); default DATA_DIR/images. */
  @IsOptional()
  @IsString({ message: 'a folder path' })
  IMAGE_STORAGE_DIR?: string;

  /** Requests per minute per API key (fixed window); failed requests count too. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 1000000' })
  @Min(1, { message: 'an integer from 1 to 1000000' })
  @Max(1000000, { message: 'an integer from 1 to 1000000' })
  RATE_LIMIT_PER_MINUTE = 60;

  /** Token requests per minute per client id. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 1000000' })
  @Min(1, { message: 'an integer from 1 to 1000000' })
  @Max(1000000, { message: 'an integer from 1 to 1000000' })
  TOKEN_RATE_LIMIT_PER_MINUTE = 10;

  /** Prefix of the service's keys in Redis (several services or tests may share one Redis). */
  @Matches(/^[A-Za-z0-9:_-]{1,64}$/, { message: 'letters, digits, : _ or -' })
  REDIS_KEY_PREFIX = 'results:';

  /** Port of the Prometheus metrics listener (kept off the public port); 0 turns it off. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 0 to 65535' })
  @Min(0, { message: 'an integer from 0 to 65535' })
  @Max(65535, { message: 'an integer from 0 to 65535' })
  METRICS_PORT = 9464;

  /** Express "trust proxy": hops of proxies in front (1 for one ingress), or false. */
  @Matches(/^(false|true|\d{1,2}|loopback|uniquelocal|linklocal)$/, { message: 'false, true, a number of hops, or loopback' })
  TRUST_PROXY = 'false';

  /** Origins allowed to call the API from a browser, comma-separated; empty: CORS off. */
  @IsOptional()
  @Matches(/^https?:\/\/[^\s,]+(,https?:\/\/[^\s,]+)*$/, { message: 'comma-separated http(s) origins' })
  CORS_ORIGINS?: string;

  /** How long, after SIGTERM, in-flight requests may take to finish. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 0 to 600' })
  @Min(0, { message: 'an integer from 0 to 600' })
  @Max(600, { message: 'an integer from 0 to 600' })
  SHUTDOWN_GRACE_SECONDS = 25;

  /** Longest a database query may take before the request fails with a 503. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 100 to 600000' })
  @Min(100, { message: 'an integer from 100 to 600000' })
  @Max(600000, { message: 'an integer from 100 to 600000' })
  DATABASE_QUERY_TIMEOUT_MS = 10000;

  /** Memory for rendered visit pages, in MiB per process, and a quarter of that again for their compressed forms; 0 turns both off. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 0 to 4096' })
  @Min(0, { message: 'an integer from 0 to 4096' })
  @Max(4096, { message: 'an integer from 0 to 4096' })
  VISITS_CACHE_MB = 64;

  /** Changes of one client within this many milliseconds go out as one webhook event. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 0 to 600000' })
  @Min(0, { message: 'an integer from 0 to 600000' })
  @Max(600000, { message: 'an integer from 0 to 600000' })
  WEBHOOKS_COALESCE_MS = 5000;

  /** How often each process looks for webhook events that are due. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 10 to 60000' })
  @Min(10, { message: 'an integer from 10 to 60000' })
  @Max(60000, { message: 'an integer from 10 to 60000' })
  WEBHOOKS_POLL_MS = 1000;

  /** How long a receiver has to answer a webhook with a 2xx; a delivery's claim lasts twice this. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 100 to 60000' })
  @Min(100, { message: 'an integer from 100 to 60000' })
  @Max(60000, { message: 'an integer from 100 to 60000' })
  WEBHOOKS_TIMEOUT_MS = 10000;

  /** The first retry's delay; each further one doubles it (with jitter), up to an hour. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 10 to 3600000' })
  @Min(10, { message: 'an integer from 10 to 3600000' })
  @Max(3600000, { message: 'an integer from 10 to 3600000' })
  WEBHOOKS_BACKOFF_BASE_MS = 10000;

  /** How long after its first change an event is retried before it is given up and its endpoint marked failing. */
  @Transform(toNumber)
  @IsNumber({}, { message: 'a number of hours greater than 0, at most 720' })
  @Min(0.0001, { message: 'a number of hours greater than 0, at most 720' })
  @Max(720, { message: 'a number of hours greater than 0, at most 720' })
  WEBHOOKS_RETRY_HOURS = 24;

  /** Webhook requests in flight per process, over all endpoints. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 200' })
  @Min(1, { message: 'an integer from 1 to 200' })
  @Max(200, { message: 'an integer from 1 to 200' })
  WEBHOOKS_CONCURRENCY = 10;

  /** Webhook requests in flight per process to one endpoint, so a slow receiver holds only these. */
  @Transform(toInt)
  @IsInt({ message: 'an integer from 1 to 50' })
  @Min(1, { message: 'an integer from 1 to 50' })
  @Max(50, { message: 'an integer from 1 to 50' })
  WEBHOOKS_CONCURRENCY_PER_ENDPOINT = 2;

  /** Allow plain-http webhook URLs on a loopback address (development and tests only). */
  @Transform(toBool)
  @IsBoolean({ message: 'true or false' })
  WEBHOOKS_ALLOW_HTTP_LOOPBACK = false;

  get usesPostgres(): boolean {
    return this.DATABASE_URL !== undefined;
  }

  get baseUrl(): string {
    return (this.PUBLIC_BASE_URL ?? `http://localhost:${this.PORT}`).replace(/\/+$/, '');
  }
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`Invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

/** Settings whose values never appear in a message. */
const SECRETS = new Set(['JWT_SIGNING_KEYS', 'API_KEY_HASH_KEY', 'PAGE_TOKEN_KEY', 'DATABASE_URL', 'REDIS_URL']);

function describe(errors: ValidationError[], env: Record<string, string | undefined>): string[] {
  return errors.map((error) => {
    const expected = Object.values(error.constraints ?? {})[0] ?? 'a valid value';
    const value = env[error.property] ?? '';
    const shown = SECRETS.has(error.property) && /@|PRIVATE|.{24,}/.test(value) ? '[hidden]' : JSON.stringify(value);
    return `${error.property}=${shown}: expected ${expected}`;
  });
}

/**
 * Reads and validates the environment. Empty strings count as unset, so that a blank
 * line in a manifest falls back to the default instead of failing obscurely.
 */
export function loadConfig(env: Record<string, string | undefined> = process.env): AppConfig {
  const defaults = new AppConfig();
  const raw: Record<string, unknown> = {};
  const optional = [
    'DATABASE_URL',
    'REDIS_URL',
    'PUBLIC_BASE_URL',
    'JWT_SIGNING_KEYS',
    'JWT_SIGNING_KEYS_FILE',
    'PAGE_TOKEN_KEY',
    'IMAGE_STORAGE_DIR',
    'CORS_ORIGINS',
  ];
  for (const key of Object.keys(defaults).concat(optional)) {
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
  if (problems.length > 0) throw new ConfigError(problems);
  return config;
}
