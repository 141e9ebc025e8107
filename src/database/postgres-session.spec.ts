import { postgresConnection, sessionSettingsProblem } from './postgres-session.js';

describe('the PostgreSQL connection of the service', () => {
  const connect = (url: string) => postgresConnection({ DATABASE_URL: url, DATABASE_SCHEMA: 'results' });

  it("keeps the URL's own options ahead of the service's settings, which come last and win", () => {
    const { url, options } = connect('postgres://svc@db.internal:5432/results?options=-c%20statement_timeout%3D5000&sslmode=disable');
    expect(new URL(url).searchParams.has('options')).toBe(false);
    expect(new URL(url).searchParams.get('sslmode')).toBe('disable');
    expect(options).toBe('-c statement_timeout=5000 -c search_path=results -c DateStyle=ISO,YMD -c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3');
  });

  it('keeps the last options of a URL that gives them twice, as node-postgres reads them, and none in the URL', () => {
    const given = 'postgres://svc@db.internal/results?options=-c%20work_mem%3D1MB&options=-c%20work_mem%3D64MB';
    const { url, options } = connect(given);
    expect(new URL(url).searchParams.has('options')).toBe(false);
    expect(options.startsWith('-c work_mem=64MB -c search_path=results')).toBe(true);
    expect(options).not.toContain('1MB');
  });

  it('sets only its own without options in the URL', () => {
    expect(connect('postgres://svc@db.internal/results').options).toBe('-c search_path=results -c DateStyle=ISO,YMD -c TimeZone=UTC -c IntervalStyle=postgres -c extra_float_digits=3');
  });
});

describe('the settings a session runs with', () => {
  const row = { search_path: 'results', datestyle: 'ISO, YMD', timezone: 'UTC', intervalstyle: 'postgres', extra_float_digits: '1', server_version_num: '150004' };

  it('takes an extra_float_digits of 1 on PostgreSQL 12 and later, where it gives each double exactly, and 2 or more before, where 1 gives 16 digits', () => {
    expect(sessionSettingsProblem(row, 'results')).toBeNull();
    expect(sessionSettingsProblem({ ...row, extra_float_digits: '0' }, 'results')).toMatch(/\(extra_float_digits is 0, not 1 or more\)/);
    expect(sessionSettingsProblem({ ...row, server_version_num: '110022' }, 'results')).toMatch(/\(extra_float_digits is 1, not 2 or more\)/);
    expect(sessionSettingsProblem({ ...row, extra_float_digits: '2', server_version_num: '110022' }, 'results')).toBeNull();
  });
});
