import sequencerModule from '@jest/test-sequencer';

const Sequencer = sequencerModule.default ?? sequencerModule;

/**
 * The files that take longest, slowest first, as a CI run on a fresh clone measured them (6 s
 * and more): they start processes (an `npm ci`, Chromium, the built service, the CLI) or load
 * the demo data set. A long file started late keeps one worker busy after the others are done.
 */
const SLOW = [
  'test/embedded/swagger-ui.e2e-spec.ts',
  'test/cli.e2e-spec.ts',
  'test/webhooks.e2e-spec.ts',
  'test/embedded/setting-checks.e2e-spec.ts',
  'test/embedded/start.e2e-spec.ts',
  'test/embedded/start-refusals.e2e-spec.ts',
  'test/embedded/production-start.e2e-spec.ts',
  'test/http/redis.e2e-spec.ts',
  'test/webhooks-process.e2e-spec.ts',
  'test/postgres/data-versions.e2e-spec.ts',
  'test/menus.e2e-spec.ts',
  'test/postgres/webhooks-replicas.e2e-spec.ts',
  'test/postgres/graceful-shutdown.e2e-spec.ts',
  'test/postgres/fresh-schema.e2e-spec.ts',
  'test/embedded/cli-embedded.e2e-spec.ts',
  'test/postgres/changes-concurrency.e2e-spec.ts',
  'test/http/upload-limit.e2e-spec.ts',
  'test/embedded/demo-year.e2e-spec.ts',
  'test/postgres/database-outage.e2e-spec.ts',
  'test/demo-seeding.e2e-spec.ts',
  'test/embedded/image-sweep-settings.e2e-spec.ts',
  'src/common/idle-connections.spec.ts',
];

/**
 * Jest's order (failed first, then slowest by the last run's times) where it knows the
 * times; on a first run, where it would go by file size, the known slow files start first so
 * that no worker is left with one of them at the end.
 */
export default class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const sorted = super.sort(tests);
    if (sorted.some((test) => typeof test.duration === 'number')) return sorted;
    const rank = (test) => {
      const index = SLOW.findIndex((path) => test.path.endsWith(path));
      return index < 0 ? SLOW.length : index;
    };
    return sorted.map((test, index) => ({ test, index })).sort((a, b) => rank(a.test) - rank(b.test) || a.index - b.index).map(({ test }) => test);
  }
}
