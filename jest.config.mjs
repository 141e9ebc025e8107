import { esmShim } from './test/support/esm-shims.mjs';

/**
 * Native ESM mode (the NestJS 12 packages are ES modules only). The HTTP and database
 * tests run twice: once on the embedded SQLite and once on PostgreSQL.
 */
const common = {
  rootDir: '.',
  extensionsToTreatAsEsm: ['.ts'],
  moduleNameMapper: {
    '^(\\.{1,2}/.*)\\.js$': '$1',
    // CommonJS that requires NestJS 12's ES modules: see test/support/esm-shims.mjs.
    '^@nestjs/throttler$': esmShim('@nestjs/throttler'),
  },
  // ts-jest transpiles each file on its own (tsconfig isolatedModules); `npm test` type-checks separately.
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true, tsconfig: 'tsconfig.json' }] },
  testEnvironment: 'node',
  // A worker keeps what it resolved and compiled from one test file to the next (the files
  // say why): the modules every file loads afresh cost it less. Measured on 2026-12-06, 22
  // HTTP test files in one process, alternately with and without: 40.1 and 42.4 s of CPU
  // against 46.1 and 47.3 s.
  runtime: '<rootDir>/test/support/runtime.cjs',
  resolver: '<rootDir>/test/support/resolver.cjs',
};

/** Tests that start the built service or CLI: dist/ is rebuilt first when the sources changed. */
const buildsDist = { globalSetup: '<rootDir>/test/support/build-dist.mjs' };

export default {
  // A test or hook that starts the built service (migrations, demo data) or Chromium takes
  // tens of seconds on a busy 2-core machine; waits inside tests are for conditions.
  testTimeout: 120_000,
  // One more worker than the two cores: a test waiting on a spawned process, a browser or a
  // database leaves a core idle otherwise (measured: 8 min 0 s with 2 workers, 6 min 30 s with 3).
  // Four were measured on 2026-12-06 (1,839 tests), alternating with three: npm test 414 and
  // 372 s against 404 and 412 s, a difference within the machine's variation from run to run,
  // with more tests racing each other for the cores.
  maxWorkers: 3,
  testSequencer: '<rootDir>/test/support/sequencer.mjs',
  projects: [
    { ...common, displayName: 'unit', roots: ['<rootDir>/src'], testMatch: ['**/*.spec.ts'] },
    // The Kubernetes manifests, rendered by kubectl: no database, no service.
    { ...common, displayName: 'deploy', roots: ['<rootDir>/deploy'], testMatch: ['**/*.spec.ts'] },
    {
      ...common,
      ...buildsDist,
      displayName: 'sqlite',
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.e2e-spec.ts'],
      setupFiles: ['<rootDir>/test/setup/sqlite.ts'],
      // Tests of PostgreSQL behaviour (a TCP proxy in front of the server).
      testPathIgnorePatterns: ['/test/postgres/'],
    },
    {
      ...common,
      ...buildsDist,
      displayName: 'postgres',
      roots: ['<rootDir>/test'],
      testMatch: ['**/*.e2e-spec.ts'],
      setupFiles: ['<rootDir>/test/setup/postgres.ts'],
      // The embedded-default tests are about the SQLite start path only; the HTTP tests of
      // test/http/ (parsing, limits, compression, token damage, rate-limit counters, OAuth
      // client libraries) are of layers no database decides, so they run once, on SQLite.
      testPathIgnorePatterns: ['/test/embedded/', '/test/http/'],
    },
  ],
};
