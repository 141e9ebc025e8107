import { isDatabaseUnavailable, unavailableCause } from './problem.filter.js';

describe('isDatabaseUnavailable (a 503 with Retry-After, not a 500)', () => {
  const error = (fields: { message?: string } & Record<string, unknown>) => Object.assign(new Error(fields.message ?? 'x'), fields);

  it.each([
    ['the server statement timeout (57014)', error({ driverError: error({ code: '57014', message: 'canceling statement due to statement timeout' }) })],
    ['a full disk on PostgreSQL (53100)', error({ code: '53100' })],
    ['a full disk on SQLite', error({ driverError: error({ code: 'SQLITE_FULL' }) })],
    ['a full image folder', error({ code: 'ENOSPC' })],
    ['a query runner released when its connection failed', error({ name: 'QueryRunnerAlreadyReleasedError' })],
    ['its provider', error({ name: 'QueryRunnerProviderAlreadyReleasedError' })],
    ['a terminated connection', error({ code: '57P01' })],
    ['a connection ended by the idle-session timeout as a query was sent (57P05)', error({ driverError: error({ code: '57P05', message: 'terminating connection due to idle-session timeout' }) })],
    ['a connection ended as its database is dropped (57P04)', error({ code: '57P04' })],
    ['a lock held by another session past the lock timeout (55P03)', error({ driverError: error({ code: '55P03', message: 'canceling statement due to lock timeout' }) })],
    ['a database dropped or being restored (3D000)', error({ code: '3D000', message: 'database "results" does not exist' })],
    ['a login refused (28P01)', error({ code: '28P01', message: 'password authentication failed for user "results"' })],
    ['a role gone (28000)', error({ code: '28000' })],
    ['a database closed to new connections (55000, ALLOW_CONNECTIONS false)', error({ code: '55000', message: 'database "results" is not currently accepting connections' })],
    ['a server name that does not resolve', error({ code: 'ENOTFOUND', message: 'getaddrinfo ENOTFOUND postgres' })],
    ['a name lookup that failed for now', error({ code: 'EAI_AGAIN' })],
    ['a role without grants on the tables (42501)', error({ driverError: error({ code: '42501', message: 'permission denied for table api_keys' }) })],
    ['a table the migrations have not made yet (42P01)', error({ driverError: error({ code: '42P01', message: 'relation "api_keys" does not exist' }) })],
    ['a column they have not added yet (42703)', error({ driverError: error({ code: '42703', message: 'column "x" does not exist' }) })],
    ['on SQLite, no such table', error({ driverError: error({ code: 'SQLITE_ERROR', message: 'no such table: api_keys' }) })],
    ['on SQLite, the write lock another process holds', error({ driverError: error({ code: 'SQLITE_BUSY', message: 'database is locked' }) })],
    // What a transaction's wait for the lock also waits through and gives up with (see beginImmediate).
    ['on SQLite, a write-ahead log another process recovers', error({ driverError: error({ code: 'SQLITE_BUSY_RECOVERY', message: 'database is locked' }) })],
    ['on SQLite, a snapshot another writer moved past', error({ driverError: error({ code: 'SQLITE_BUSY_SNAPSHOT', message: 'database is locked' }) })],
  ])('%s', (_what, e) => {
    expect(isDatabaseUnavailable(e)).toBe(true);
  });

  it.each([
    ['a unique violation', error({ code: '23505' })],
    ['another 55000, a fault of the code', error({ driverError: error({ code: '55000', message: 'currval of sequence "dishes_id_seq" is not yet defined in this session' }) })],
    ['another SQLite error', error({ driverError: error({ code: 'SQLITE_ERROR', message: 'near "x": syntax error' }) })],
    ['a plain error', new Error('boom')],
    ['nothing', undefined],
  ])('but not %s', (_what, e) => {
    expect(isDatabaseUnavailable(e)).toBe(false);
  });
});

describe('unavailableCause (what the 503 says)', () => {
  const error = (fields: Record<string, unknown>) => Object.assign(new Error('x'), fields);

  it('names a full disk apart from a database out of reach', () => {
    expect(unavailableCause(error({ code: 'ENOSPC' }))).toBe('disk-full');
    expect(unavailableCause(error({ code: '53100' }))).toBe('disk-full');
    expect(unavailableCause(error({ driverError: error({ code: 'SQLITE_FULL' }) }))).toBe('disk-full');
    expect(unavailableCause(error({ code: 'ECONNREFUSED' }))).toBe('database');
    expect(unavailableCause(error({ driverError: error({ code: '57014' }) }))).toBe('database');
    // A write on a standby (a failover under way) or a database made read-only.
    expect(unavailableCause(error({ driverError: error({ code: '25006' }) }))).toBe('database');
    expect(unavailableCause(error({ code: '23505' }))).toBeUndefined();
  });

  it('names storage that cannot be used: read-only, failing, or a file of the images refused', () => {
    for (const code of ['SQLITE_READONLY', 'SQLITE_READONLY_DBMOVED', 'SQLITE_IOERR', 'SQLITE_IOERR_WRITE', 'SQLITE_IOERR_FSYNC', 'SQLITE_CANTOPEN', 'SQLITE_CORRUPT', 'SQLITE_CORRUPT_INDEX', 'SQLITE_NOTADB', 'EROFS', 'EIO', '58030']) {
      expect([code, unavailableCause(error({ code }))]).toEqual([code, 'storage']);
    }
    expect(unavailableCause(error({ driverError: error({ code: 'SQLITE_IOERR_WRITE' }) }))).toBe('storage');
    // Permissions count for a file (an image's), not for anything else that says EACCES.
    expect(unavailableCause(error({ code: 'EACCES', path: '/data/images/x' }))).toBe('storage');
    expect(unavailableCause(error({ code: 'EPERM', path: '/data/images/x' }))).toBe('storage');
    expect(unavailableCause(error({ code: 'EACCES' }))).toBeUndefined();
    expect(unavailableCause(error({ code: 'SQLITE_CONSTRAINT_UNIQUE' }))).toBeUndefined();
    expect(unavailableCause(error({ code: 'SQLITE_IOERRX' }))).toBeUndefined();
  });

  it('names descriptors all taken, the process\'s or the system\'s, wherever the file was', () => {
    expect(unavailableCause(error({ code: 'EMFILE', path: '/data/images/x' }))).toBe('descriptors');
    expect(unavailableCause(error({ code: 'EMFILE' }))).toBe('descriptors');
    expect(unavailableCause(error({ code: 'ENFILE' }))).toBe('descriptors');
    expect(unavailableCause(error({ driverError: error({ code: 'EMFILE' }) }))).toBe('descriptors');
  });
});
