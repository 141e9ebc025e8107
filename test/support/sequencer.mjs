import sequencerModule from '@jest/test-sequencer';

const Sequencer = sequencerModule.default ?? sequencerModule;

/**
 * The files that take longest, slowest first: they start processes (an `npm ci`, Chromium,
 * the built service) or load the demo data set.
 */
const SLOW = [
  'test/embedded/production-start.e2e-spec.ts',
  'test/cli.e2e-spec.ts',
  'test/embedded/swagger-ui.e2e-spec.ts',
  'test/http/redis.e2e-spec.ts',
  'test/embedded/start.e2e-spec.ts',
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
