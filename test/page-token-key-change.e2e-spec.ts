import request from 'supertest';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { startVisitsApp, type VisitsApp } from './helpers/visits-fixture.js';

const OLD_KEY = 'the page-token key of before the change';
const NEW_KEY = 'the page-token key of after the change';
const PROBLEM = 'application/problem+json; charset=utf-8';

interface FeedPage {
  data: { visits: { visitId: number }[] };
  paging: { after: string };
}

/**
 * PAGE_TOKEN_KEY changed replica by replica (README, "Key rotation and backup"): each step's
 * replicas serve beside the step's before, on one database, and no token a partner holds is
 * refused by any of them: (1) every replica opens the new key's tokens too, (2) every replica
 * seals under the new key and opens the old one's too, (3) the old key is dropped once no
 * partner keeps a token of it.
 */
describe(`PAGE_TOKEN_KEY changed without a stop (${process.env.TEST_DATABASE})`, () => {
  let before: VisitsApp;
  const replicas: TestApp[] = [];
  const replica = async (env: Record<string, string>): Promise<TestApp> => {
    const { DATA_DIR, DATABASE_SCHEMA } = before.t.env;
    const t = await startTestApp({ AUTH_CACHE_SECONDS: '0', DATA_DIR, ...(DATABASE_SCHEMA ? { DATABASE_SCHEMA } : {}), ...env });
    replicas.push(t);
    return t;
  };

  beforeAll(async () => {
    before = await startVisitsApp({ PAGE_TOKEN_KEY: OLD_KEY });
  });
  afterAll(async () => {
    // The replicas share the first app's database: it is dropped last.
    for (const t of replicas.reverse()) await t.close();
    await before.t.close();
  });

  const feed = (t: TestApp, query: string) =>
    request(t.http).get(`/visits/standard/changes?SvcClientId=1001&Take=2&${query}`).set('svc-api-key', before.partner.apiKey).set('Authorization', `Bearer ${before.token}`);

  async function page(t: TestApp, query: string): Promise<FeedPage> {
    const res = await feed(t, query);
    expect([res.status, res.headers['content-type']]).toEqual([200, 'application/json; charset=utf-8']);
    return JSON.parse(res.text) as FeedPage;
  }

  /** The ids of every page from the token `after` on, read by the replicas in turn. */
  async function walk(after: string, readers: TestApp[]): Promise<number[]> {
    const ids: number[] = [];
    for (let i = 0; ; i += 1) {
      const body = await page(readers[i % readers.length], `after=${encodeURIComponent(after)}`);
      if (body.data.visits.length === 0) return ids;
      ids.push(...body.data.visits.map((v) => v.visitId));
      after = body.paging.after;
    }
  }

  it('refuses no token at any step, and each step goes on from where the last left off', async () => {
    const since = `Since=${encodeURIComponent(new Date(Date.now() - 3600_000).toISOString())}`;
    const first = await page(before.t, since);
    const everything = [...first.data.visits.map((v) => v.visitId), ...(await walk(first.paging.after, [before.t]))];
    expect(everything.length).toBeGreaterThan(6);

    // Step 1: replicas that open the new key's tokens too, beside one not yet changed.
    const opening = await replica({ PAGE_TOKEN_KEY: OLD_KEY, PAGE_TOKEN_ACCEPTED_KEYS: NEW_KEY });
    expect(await walk(first.paging.after, [before.t, opening])).toEqual(everything.slice(2));
    // Step 2: replicas that seal under the new key, beside those of step 1, which open their tokens.
    const sealing = await replica({ PAGE_TOKEN_KEY: NEW_KEY, PAGE_TOKEN_ACCEPTED_KEYS: ` ${OLD_KEY} , ${NEW_KEY}` });
    expect(await walk(first.paging.after, [sealing, opening])).toEqual(everything.slice(2));
    const sealed = (await page(sealing, since)).paging.after;
    expect(await walk(sealed, [opening, sealing])).toEqual(everything.slice(2));

    // What step 1 is for: a replica of before, which opens the old key's tokens only, refuses the new key's.
    const refused = await feed(before.t, `after=${encodeURIComponent(sealed)}`);
    expect([refused.status, refused.headers['content-type'], JSON.parse(refused.text).errors]).toEqual([400, PROBLEM, ["'after' is not a valid page token."]]);
    // Step 3: the old key dropped: its tokens are refused, the new key's still taken.
    const after = await replica({ PAGE_TOKEN_KEY: NEW_KEY });
    expect(await walk(sealed, [after])).toEqual(everything.slice(2));
    const old = await feed(after, `after=${encodeURIComponent(first.paging.after)}`);
    expect([old.status, JSON.parse(old.text).errors]).toEqual([400, ["'after' is not a valid page token."]]);
  });
});
