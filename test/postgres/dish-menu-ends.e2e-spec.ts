import request from 'supertest';
import { DataSource } from 'typeorm';
import type { IssuedCredential } from '../../src/auth/credentials.service.js';
import { addDays, localDate } from '../../src/common/clock.js';
import { Menu } from '../../src/menus/entities/menu.entity.js';
import { MenusRepository } from '../../src/menus/menus.repository.js';
import { issueCredential, seedClients, tokenFor } from '../helpers/auth.js';
import { backendPid, behindALock, queuedBehind, withConnection } from '../helpers/pg-locks.js';
import { makeImage } from '../helpers/images.js';
import { startTestApp, type TestApp } from '../helpers/test-app.js';

/**
 * A dish posted while an import ends its menu on PostgreSQL: the menu is judged again inside
 * the dish's transaction, under a share lock on its row taken before the dish's own lock. An
 * import that ended the menu first is seen (the post is refused, nothing written); a post that
 * holds the menu first is waited for by the import, so no dish is ever added to a menu that had
 * ended when it was written.
 */
describe('a dish posted while its menu ends (postgres)', () => {
  let t: TestApp;
  let db: DataSource;
  let partner: IssuedCredential;
  let token: string;
  let today: string;

  beforeAll(async () => {
    t = await startTestApp();
    await seedClients(t);
    db = t.app.get(DataSource);
    today = localDate(t.config.RESULTS_TIMEZONE);
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
  });
  afterAll(async () => {
    await t.close();
  });

  async function activeMenu(id: number): Promise<void> {
    await t.app.get(MenusRepository).saveMenus([
      { menu: Object.assign(new Menu(), { id, clientId: 1001, name: `Menu ${id}`, startDate: addDays(today, -10), endDate: null }), dishes: [] },
    ]);
  }

  async function post(menuId: number, code: string): Promise<request.Response> {
    return request(t.http)
      .post('/menus/dishes?SvcClientId=1001')
      .set('svc-api-key', partner.apiKey)
      .set('Authorization', `Bearer ${token}`)
      .attach('', await makeImage('png', 16, 16), 'a.png')
      .field('json', JSON.stringify({ menuId, code, description: 'Soup', type: 'Starter' }));
  }

  const dishesOf = async (menuId: number): Promise<string[]> =>
    (await db.query<{ code: string }[]>('SELECT code FROM dishes WHERE menu_id = $1 ORDER BY code', [menuId])).map((r) => r.code);
  const images = async (): Promise<number> => Number((await db.query<{ n: string }[]>('SELECT COUNT(*) AS n FROM dish_images'))[0].n);

  it('refuses the post when an import that ends the menu commits while the post waits for it', async () => {
    await activeMenu(601);
    const before = await images();
    // The import has written the menu's end and not committed: the post's first look sees it active, then waits.
    const { queued, outcomes } = await behindALock(db, 'UPDATE menus SET end_date = $1 WHERE id = $2', [addDays(today, -1), 601], () => [post(601, 'LATE')]);
    expect(queued).toBe(1);
    const answer = (outcomes[0] as PromiseFulfilledResult<request.Response>).value;
    expect(answer.status).toBe(400);
    expect(answer.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    expect(answer.body.errors).toEqual([
      `'menuId' 601 is a menu that ended on ${addDays(today, -1)}: dishes are added to active menus (as GET /menus lists them).`,
    ]);
    expect(await dishesOf(601)).toEqual([]);
    expect(await images()).toBe(before);
  });

  it('makes an import that ends the menu wait for a post that holds the menu, which is written before the end', async () => {
    await activeMenu(602);
    const answer = await withConnection(db, async (otherPost) => {
      const otherPid = await backendPid(otherPost);
      await otherPost.startTransaction();
      // Another post of the same code holds the dish's lock: this post waits behind it, holding the menu.
      await otherPost.query('SELECT pg_advisory_xact_lock(hashtext($1))', ['dish:602:EARLY']);
      const answered = post(602, 'EARLY');
      expect(await queuedBehind(db, otherPid)).toBe(1);
      // The import that ends the menu now waits for the post: two queued behind the other post.
      const ending = withConnection(db, (menusImport) =>
        menusImport.query('UPDATE menus SET end_date = $1 WHERE id = $2', [addDays(today, -1), 602]),
      );
      expect(await queuedBehind(db, otherPid, 2)).toBe(2);
      await otherPost.commitTransaction();
      const [res] = await Promise.all([answered, ending]);
      return res;
    });
    expect(answer.status).toBe(200);
    expect(answer.body.data.dish).toMatchObject({ menuId: 602, code: 'EARLY' });
    expect(await dishesOf(602)).toEqual(['EARLY']);
    const [menu] = await db.query<{ end_date: string }[]>('SELECT end_date FROM menus WHERE id = $1', [602]);
    expect(menu.end_date).toBe(addDays(today, -1));
    // Ended now: the next post is refused at once.
    const after = await post(602, 'AFTER');
    expect(after.status).toBe(400);
    expect(await dishesOf(602)).toEqual(['EARLY']);
  });
});
