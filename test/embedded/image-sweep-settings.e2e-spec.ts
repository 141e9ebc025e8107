import { copyFileSync, mkdtempSync, readdirSync, readFileSync, utimesSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { cli, cliJson } from '../helpers/cli.js';
import { startService } from '../helpers/service-process.js';

interface DemoCredential {
  clientId: string;
  clientSecret: string;
  apiKey: string;
}

const escaped = (text: string): string => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The refusal of a sweep of a folder that is not the database's, for the folder and the reason given. */
const refusal = (folder: string, files: number, why: string): RegExp =>
  new RegExp(
    `^error: ${escaped(folder)} holds ${files} image files, and the database names none of them \\(${escaped(why)}\\): it does not look like this database's image folder\\. ` +
      `Are DATABASE_SCHEMA \\(or DATA_DIR\\) and IMAGE_STORAGE_DIR those the service runs with\\? Nothing was removed; give --force to sweep the folder all the same\\.\n$`,
  );

/** Every file of the folder made two hours old: past a sweep's minimum age. */
function age(folder: string): void {
  const twoHoursAgo = new Date(Date.now() - 2 * 3600_000);
  for (const name of readdirSync(folder)) utimesSync(join(folder, name), twoHoursAgo, twoHoursAgo);
}

describe('images sweep run with another database or image folder than the service', () => {
  it("refuses to sweep a folder of which the database names no file, where it removed every image the service serves", async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'results-sweep-settings-'));
    const folder = mkdtempSync(join(tmpdir(), 'results-sweep-images-'));
    const settings = { DATA_DIR: dataDir, IMAGE_STORAGE: 'filesystem', IMAGE_STORAGE_DIR: folder, DEMO_DAYS: '1', LOG_LEVEL: 'warn' };
    const service = await startService(settings);
    try {
      const files = readdirSync(folder).sort();
      expect(files.length).toBeGreaterThan(0);
      age(folder);
      const demo = (JSON.parse(readFileSync(join(dataDir, 'demo-credentials.json'), 'utf8')) as { credentials: DemoCredential[] }).credentials[0];
      const token = (await (
        await fetch(`${service.url}/connect/token`, {
          method: 'POST',
          headers: { 'svc-api-key': demo.apiKey, 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ grant_type: 'client_credentials', client_id: demo.clientId, client_secret: demo.clientSecret }),
        })
      ).json()) as { access_token: string };
      const headers = { 'svc-api-key': demo.apiKey, authorization: `Bearer ${token.access_token}` };
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
      for (const args of [['images', 'sweep'], ['images', 'sweep', '--dry-run']]) {
        const refused = await cli(args, typo);
        expect([refused.code, refused.stdout]).toEqual([1, '']);
        // The first run made the database, and said so: a note is no refusal, and it swept on.
        const note = `note: there was no database at ${join(typo.DATA_DIR, 'results.sqlite')}; a new, empty one was made (is DATA_DIR right?)\n`;
        expect(refused.stderr.startsWith(note)).toBe(args.length === 2);
        expect(refused.stderr.replace(note, '')).toMatch(refusal(folder, files.length, 'the database keeps no image at all'));
      }
      expect(readdirSync(folder).sort()).toEqual(files);
      expect(await imageStatus()).toBe(200);

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
});
