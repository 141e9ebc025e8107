import { environmentFailure } from './environment-failure.js';

const failure = (message: string, fields: object): Error => Object.assign(new Error(message), fields);

describe('environmentFailure', () => {
  it("says in one line that the database's TLS certificate is not trusted, and what to do", () => {
    for (const code of ['DEPTH_ZERO_SELF_SIGNED_CERT', 'SELF_SIGNED_CERT_IN_CHAIN', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'ERR_TLS_CERT_ALTNAME_INVALID']) {
      expect(environmentFailure(failure('self-signed certificate', { code }))).toBe(
        "the database cannot be used: its TLS certificate is not trusted (self-signed certificate); give its CA with sslrootcert=<file> in DATABASE_URL (deploy/README.md)",
      );
    }
  });

  it('says in one line that the database offers no TLS where sslmode asks for it (prefer too, in node-postgres)', () => {
    expect(environmentFailure(new Error('The server does not support SSL connections'))).toBe(
      "the database cannot be used: it does not offer TLS, which DATABASE_URL's sslmode asks for (node-postgres takes prefer as require); use sslmode=disable for a plain connection",
    );
  });

  it('says in one line that a pooler refuses the parameters the sessions start with, and where to read what to do', () => {
    // PgBouncer's FATAL, as node-postgres gives it (08P01).
    expect(environmentFailure(failure('unsupported startup parameter: options', { code: '08P01' }))).toBe(
      'the database cannot be used: unsupported startup parameter: options (a pooler between the service and PostgreSQL refuses ' +
        'the settings the service\'s sessions start with: README, "Running on PostgreSQL and Redis")',
    );
  });

  it('names the database, a port held by another process and a folder; nothing else', () => {
    expect(environmentFailure(failure('connect ECONNREFUSED 127.0.0.1:1', { code: 'ECONNREFUSED' }))).toBe('the database cannot be used: connect ECONNREFUSED 127.0.0.1:1');
    expect(environmentFailure(failure('listen EADDRINUSE: address already in use 0.0.0.0:9464', { code: 'EADDRINUSE', syscall: 'listen' }))).toBe(
      'cannot listen: listen EADDRINUSE: address already in use 0.0.0.0:9464',
    );
    expect(environmentFailure(failure("EACCES: permission denied, mkdir '/data'", { code: 'EACCES', path: '/data' }))).toBe("cannot use /data: EACCES: permission denied, mkdir '/data'");
    // An embedded database file that cannot be opened or written (read-only, a folder where no file can be made).
    expect(environmentFailure(failure('attempt to write a readonly database', { code: 'SQLITE_READONLY' }))).toBe('the database cannot be used: attempt to write a readonly database');
    expect(environmentFailure(failure('SqliteError: attempt to write a readonly database', { driverError: { code: 'SQLITE_READONLY_DBMOVED' } }))).toBe(
      'the database cannot be used: SqliteError: attempt to write a readonly database',
    );
    expect(environmentFailure(failure('unable to open database file', { code: 'SQLITE_CANTOPEN' }))).toBe('the database cannot be used: unable to open database file');
    expect(environmentFailure(failure('UNIQUE constraint failed: clients.id', { code: 'SQLITE_CONSTRAINT_PRIMARYKEY' }))).toBeUndefined();
    // A damaged file, and every file descriptor taken.
    for (const [code, message] of [['SQLITE_CORRUPT', 'database disk image is malformed'], ['SQLITE_NOTADB', 'file is not a database'], ['SQLITE_CORRUPT_INDEX', 'database disk image is malformed']]) {
      expect(environmentFailure(failure(message, { code }))).toBe(
        `the embedded database file (results.sqlite in DATA_DIR) is damaged (${message}): restore it from a backup (README, "Key rotation and backup")`,
      );
    }
    expect(environmentFailure(failure("EMFILE: too many open files, open '/data/x'", { code: 'EMFILE', path: '/data/x' }))).toBe(
      "no file descriptor left (the process's limit: ulimit -n, a container's nofile): EMFILE: too many open files, open '/data/x'",
    );
    expect(environmentFailure(new TypeError('x is not a function'))).toBeUndefined();
    expect(environmentFailure('text')).toBeUndefined();
  });
});
