import { copyFileSync, mkdtempSync, readdirSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, cliJson } from '../helpers/cli.js';
import { demoHeaders } from '../helpers/demo-client.js';
import { startService } from '../helpers/service-process.js';

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The refusal of a sweep of a folder that is not the database's, for the folder and the reason given. */
const refusal = (folder: string, files: number, why: string): RegExp =>
  new RegExp(
    `^error: ${escaped(folder)} holds ${files} image files old enough to sweep, and the database names none of its files \\(${escaped(why)}\\): it does not look like this database's image folder\\. ` +
      `Are DATABASE_SCHEMA \\(or DATA_DIR\\) and IMAGE_STORAGE_DIR those the service runs with\\? Nothing was removed; give --force to sweep the folder all the same\\.\n$`,
  );

/** Every file of the folder made two hours old: past a sweep's minimum age. */
function age(folder: string): void {
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  for (const name of readdirSync(folder)) utimesSync(join(folder, name), twoHoursAgo, twoHoursAgo);
}

/** A service of the demo data set keeping its images in files, in a folder of its own. */
async function startWithImageFolder(): Promise<{ dataDir: string; folder: string; settings: Record<string, string>; service: Awaited<ReturnType<typeof startService>> }> {
  const dataDir = mkdtempSync(join(tmpdir(), 'results-sweep-settings-'));
  const folder = mkdtempSync(join(tmpdir(), 'results-sweep-images-'));
  const settings = { DATA_DIR: dataDir, IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: folder, DEMO_DAYS: '1', LOG_LEVEL: 'warn' };
  return { dataDir, folder, settings, service: await startService(settings) };
}

describe('images sweep run with another database or image folder than the service', () => {
  it("refuses to sweep a folder of which the database names no file, where it removed every image the service serves", async () => {
    const { dataDir, folder, settings, service } = await startWithImageFolder();
    try {
      const files = readdirSync(folder).sort();
      expect(files.length).toBeGreaterThan(0);
      age(folder);
      const { headers } = await demoHeaders(service.url, dataDir);
      const dishes = (await (await fetch(`${service.url}/menus/dishes?SvcClientId=1001&MenuId=101`, { headers })).json()) as {
        data: { dishes: { image: { url: string } | null }[] };
      };
      // Its path, at the address the service listens on (the links name PUBLIC_BASE_URL's).
      const link = new URL(dishes.data.dishes.find((d) => d.image)!.image!.url);
      const imageUrl = `${service.url}${link.pathname}${link.search}`;
      const imageStatus = async (): Promise<number> => {
        const response = await fetch(imageUrl, { headers });
        await response.arrayBuffer();
        return response.status;
      };
      expect(await imageStatus()).toBe(200);

      // DATA_DIR mistyped: a new, empty database, which names none of the service's files.
      const typo = { ...settings, DATA_DIR: join(dataDir, 'typo') };
      const refused = await cli(['images', 'sweep'], typo);
      expect([refused.code, refused.stdout]).toEqual([1, '']);
      // The run made the database, and said so: a note is no refusal, and it swept on.
      const note = `note: there was no database at ${join(typo.DATA_DIR, 'results.sqlite')}; a new, empty one was made (is DATA_DIR right?)\n`;
      expect(refused.stderr.startsWith(note)).toBe(true);
      expect(refused.stderr.replace(note, '')).toMatch(refusal(folder, files.length, 'the database keeps no image at all'));
      // A dry run removes nothing: it lists what it finds, says why the sweep would be refused, and fails.
      const dry = await cli(['images', 'sweep', '--dry-run'], typo);
      expect([dry.code, dry.stderr]).toEqual([1, '']);
      const doubt = `${folder} holds ${files.length} image files old enough to sweep, and the database names none of its files (the database keeps no image at all): it does not look like this database's image folder. Are DATABASE_SCHEMA (or DATA_DIR) and IMAGE_STORAGE_DIR those the service runs with?`;
      expect(dry.stdout.split('\n').slice(0, 2)).toEqual([
        `the sweep itself would be refused: ${doubt}`,
        `${folder}: ${files.length} files checked; would remove (--dry-run) ${files.length} that no image names (${files.reduce((sum, f) => sum + statSync(join(folder, f)).size, 0)} bytes)`,
      ]);
      const dryJson = await cli(['images', 'sweep', '--dry-run', '--json'], typo);
      expect(dryJson.code).toBe(1);
      expect(JSON.parse(dryJson.stdout)).toMatchObject({ folder, checked: files.length, removed: false, damaged: [], notThisDatabasesFolder: doubt });
      expect(readdirSync(folder).sort()).toEqual(files);
      expect(await imageStatus()).toBe(200);

      // A new deployment's folder holding only the young file of a first upload under way (its
      // row not committed yet): nothing to remove, and no refusal.
      const first = mkdtempSync(join(tmpdir(), 'results-sweep-first-'));
      copyFileSync(join(folder, files[0]), join(first, '6a1f0d2c-3b4e-4f5a-8b6c-7d8e9f0a1b2c'));
      const fresh = { ...settings, DATA_DIR: join(dataDir, 'fresh'), IMAGE_STORAGE_DIR: first };
      expect(await cliJson(['images', 'sweep'], fresh)).toEqual({ folder: first, checked: 1, orphans: [], tooRecent: 1, removed: true, damaged: [] });
      expect(readdirSync(first)).toEqual(['6a1f0d2c-3b4e-4f5a-8b6c-7d8e9f0a1b2c']);

      // IMAGE_STORAGE_DIR naming another deployment's folder: the service's database names none of its files, and its own are not there.
      const another = mkdtempSync(join(tmpdir(), 'results-sweep-another-'));
      const foreign = '0b8e2c1e-0f3a-4c55-9d2e-8f1b2a3c4d5e';
      copyFileSync(join(folder, files[0]), join(another, foreign));
      age(another);
      const elsewhere = await cli(['images', 'sweep'], { ...settings, IMAGE_STORAGE_DIR: another });
      expect([elsewhere.code, elsewhere.stdout]).toEqual([1, '']);
      expect(elsewhere.stderr).toMatch(refusal(another, 1, `the files of ${files.length} of its images are not in it`));
      expect(readdirSync(another)).toEqual([foreign]);
      // --force sweeps it all the same.
      // (Exit 1: the images of the database whose files are not there are listed, as ever.)
      const forced = await cli(['--json', 'images', 'sweep', '--force'], { ...settings, IMAGE_STORAGE_DIR: another });
      expect([forced.code, JSON.parse(forced.stdout)]).toEqual([1, expect.objectContaining({ orphans: [expect.objectContaining({ name: foreign })], removed: true })]);
      expect(readdirSync(another)).toEqual([]);

      // With the service's settings the sweep runs, and keeps every file an image names.
      expect(await cliJson(['images', 'sweep'], settings)).toEqual({ folder, checked: files.length, orphans: [], tooRecent: 0, removed: true, damaged: [] });
      expect(readdirSync(folder).sort()).toEqual(files);
      expect(await imageStatus()).toBe(200);
    } finally {
      await service.stop();
    }
  });

  it('menus import refuses to write images into a folder that holds none of the database\'s, where the service answered 500 for each', async () => {
    const { dataDir, folder, settings, service } = await startWithImageFolder();
    try {
      const { headers } = await demoHeaders(service.url, dataDir);
      const dishesOf = async (menu: number): Promise<{ code: string; image: { url: string } | null }[]> =>
        ((await (await fetch(`${service.url}/menus/dishes?SvcClientId=1001&MenuId=${menu}`, { headers })).json()) as { data?: { dishes: { code: string; image: { url: string } | null }[] } }).data
          ?.dishes ?? [];
      const imageStatus = async (url: string): Promise<number> => {
        const link = new URL(url);
        const response = await fetch(`${service.url}${link.pathname}${link.search}`, { headers });
        await response.arrayBuffer();
        return response.status;
      };

      const files = mkdtempSync(join(tmpdir(), 'results-sweep-menus-'));
      copyFileSync(join(folder, readdirSync(folder)[0]), join(files, 'dish.png'));
      const menus = join(files, 'menus.json');
      writeFileSync(menus, JSON.stringify([{ id: 9101, name: 'Imported', startDate: '2026-01-01', dishes: [{ code: 'IM-1', description: 'Imported', type: 'Main', image: 'dish.png' }] }]));

      const another = mkdtempSync(join(tmpdir(), 'results-sweep-another-'));
      const refused = await cli(['menus', 'import', '--client', '1001', menus], { ...settings, IMAGE_STORAGE_DIR: another });
      expect(refused).toEqual({
        code: 1,
        stdout: '',
        stderr:
          `error: IMAGE_STORAGE_DIR ${another} holds none of the files of the database's images (${readdirSync(folder).length} looked for): ` +
          'the service keeps them in another folder, and would not serve the images this import wrote here. ' +
          'Run it with the IMAGE_STORAGE_DIR the service runs with (images sweep --verify --dry-run lists images whose files are missing), ' +
          'or with --force if this is that folder and the files were lost. Nothing was written.\n',
      });
      expect(readdirSync(another)).toEqual([]);
      expect(await dishesOf(9101)).toEqual([]);

      // With the service's folder it is written, and its image served.
      await cliJson(['menus', 'import', '--client', '1001', menus], settings);
      const [dish] = await dishesOf(9101);
      expect(dish.code).toBe('IM-1');
      expect(await imageStatus(dish.image!.url)).toBe(200);

      // The service's own folder, every file of it lost (a restore that left them out): the
      // import that writes them again, the way out the README gives, is refused as well, and
      // goes with --force.
      for (const name of readdirSync(folder)) rmSync(join(folder, name));
      expect(await imageStatus(dish.image!.url)).toBe(500);
      const lost = await cli(['menus', 'import', '--client', '1001', menus], settings);
      expect([lost.code, lost.stdout]).toEqual([1, '']);
      expect(lost.stderr).toMatch(/^error: IMAGE_STORAGE_DIR \S+ holds none of the files of the database's images /);
      await cliJson(['menus', 'import', '--client', '1001', '--force', menus], settings);
      const [again] = await dishesOf(9101);
      expect(await imageStatus(again.image!.url)).toBe(200);
    } finally {
      await service.stop();
    }
  });
});
