import { unavailableCause } from './problem.filter.js';

/** PostgreSQL's codes for a database that does not exist or a login it refuses. */
const CONNECTION_REFUSED_CODES = new Set(['3D000', '28P01', '28000']);
/**
 * Node's codes for a server certificate it does not trust (a private CA not given with
 * `sslrootcert`, a self-signed one, an expired one, another name): the database's TLS, which
 * `sslmode=require` checks as verify-full does in node-postgres.
 */
const CERTIFICATE_CODES = new Set([
  'DEPTH_ZERO_SELF_SIGNED_CERT',
  'SELF_SIGNED_CERT_IN_CHAIN',
  'UNABLE_TO_VERIFY_LEAF_SIGNATURE',
  'UNABLE_TO_GET_ISSUER_CERT',
  'UNABLE_TO_GET_ISSUER_CERT_LOCALLY',
  'CERT_HAS_EXPIRED',
  'CERT_NOT_YET_VALID',
  'CERT_UNTRUSTED',
  'ERR_TLS_CERT_ALTNAME_INVALID',
]);

/** SQLite's codes (and extended codes) for a database file it cannot open or write: its file's or folder's permissions, a read-only file system. */
const SQLITE_FILE_CODES = /^SQLITE_(READONLY|CANTOPEN|PERM|IOERR)(_|$)/;

/** SQLite's codes for a database file whose bytes are not a database's, or not all of one. */
const SQLITE_DAMAGED = /^SQLITE_(CORRUPT|NOTADB)(_|$)/;

/** File system errors of a folder or file the configuration names. */
const PATH_CODES = new Set(['EEXIST', 'ENOTDIR', 'EACCES', 'EPERM', 'EROFS', 'ENOENT', 'EISDIR']);

/**
 * A one-line message for an error of the environment (a database out of reach or refusing the
 * login, a full disk, a folder that cannot be used) rather than of the command or the code;
 * undefined for any other.
 */
export function environmentFailure(error: unknown): string | undefined {
  const e = error as { code?: unknown; message?: unknown; path?: unknown; syscall?: unknown; driverError?: { code?: unknown } } | null;
  if (!e || typeof e !== 'object' || typeof e.message !== 'string') return undefined;
  const cause = unavailableCause(error);
  if (cause === 'disk-full') return `no room left on the disk: ${e.message}`;
  if (cause === 'descriptors') return `no file descriptor left (the process's limit: ulimit -n, a container's nofile): ${e.message}`;
  const code = String(e.code ?? e.driverError?.code);
  // Only the embedded database says these: its file, not a setting or the network.
  if (SQLITE_DAMAGED.test(code)) {
    return `the embedded database file (results.sqlite in DATA_DIR) is damaged (${e.message}): restore it from a backup (README, "Key rotation and backup")`;
  }
  // PgBouncer's refusal of the parameters node-postgres starts each session with (the settings of postgresConnection, statement_timeout).
  if (/^unsupported (options )?startup parameter/.test(e.message)) {
    return (
      `the database cannot be used: ${e.message} (a pooler between the service and PostgreSQL refuses the settings ` +
      `the service's sessions start with: README, "Running on PostgreSQL and Redis")`
    );
  }
  if (cause === 'database' || CONNECTION_REFUSED_CODES.has(code) || SQLITE_FILE_CODES.test(code)) return `the database cannot be used: ${e.message}`;
  // node-postgres asks for TLS under every sslmode but disable (prefer included: it never falls
  // back to a plain connection), and says so in this error, which has no code.
  if (e.message === 'The server does not support SSL connections') {
    return `the database cannot be used: it does not offer TLS, which DATABASE_URL's sslmode asks for (node-postgres takes prefer as require); use sslmode=disable for a plain connection`;
  }
  if (CERTIFICATE_CODES.has(String(e.code))) {
    return `the database cannot be used: its TLS certificate is not trusted (${e.message}); give its CA with sslrootcert=<file> in DATABASE_URL (deploy/README.md)`;
  }
  if (typeof e.path === 'string' && PATH_CODES.has(String(e.code))) return `cannot use ${e.path}: ${e.message}`;
  if (cause === 'storage') return `the storage cannot be used: ${e.message}`;
  // A port another process holds (PORT or METRICS_PORT), or one below 1024 without the right to it.
  if (e.syscall === 'listen') return `cannot listen: ${e.message}`;
  return undefined;
}
