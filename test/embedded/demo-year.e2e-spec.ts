import { spawnCli } from '../helpers/cli.js';
import { isolatedConfig } from '../helpers/test-config.js';

/**
 * The demo data set at its longest (DEMO_DAYS=366, a year of visits) under a heap smaller than
 * the image's (`--max-old-space-size=256`): the visits are written to their import file as they
 * are made. Made as one array and one string, a year took more than 256 MB of heap, and the
 * image's `demo` command, or a start seeding the demo, ended out of memory.
 */
describe('the demo data set of a year', () => {
  const { env, drop } = isolatedConfig({ DEMO_DAYS: '366' });
  afterAll(() => drop());

  it('loads with a heap of 128 MB', async () => {
    const result = await spawnCli(['demo'], env, '--max-old-space-size=128');
    expect(result.stderr).not.toMatch(/heap out of memory/);
    expect(result.code).toBe(0);
    const loaded = /^demo data loaded: 2 clients, 40 branches, (\d+) visits, 3 menus; credentials in /m.exec(result.stdout);
    expect(loaded).not.toBeNull();
    // About 50 visits a day, a year of days.
    expect(Number(loaded![1])).toBeGreaterThan(366 * 40);
  });
});
