import { jest } from '@jest/globals';
import request from 'supertest';
import { DataSource } from 'typeorm';
import { AuthCacheService } from '../src/auth/auth-cache.service.js';
import { CredentialsService, type IssuedCredential } from '../src/auth/credentials.service.js';
import { localDateTime } from '../src/common/clock.js';
import { PageTokens } from '../src/common/page-token.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import type { TestApp } from './helpers/test-app.js';
import { VisitsRepository } from '../src/visits/visits.repository.js';
import { importVisits, startVisitsApp, type VisitRecord } from './helpers/visits-fixture.js';

const PROBLEM = 'application/problem+json; charset=utf-8';

interface Visit {
  visitId: number;
  visitScore: number;
  [field: string]: unknown;
}
interface FeedPage {
  data: { visits: Visit[] };
  paging: { after: string };
}

describe(`GET /visits/standard/changes and /visits/plus/changes (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let visits: VisitRecord[];
  let partner: IssuedCredential;
  let token: string;
  const hourAgo = (): string => new Date(Date.now() - 3600_000).toISOString();

  beforeAll(async () => {
    ({ t, visits, partner, token } = await startVisitsApp());
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (path: string, c: IssuedCredential = partner, bearer = token) =>
    request(t.http).get(path).set('svc-api-key', c.apiKey).set('Authorization', `Bearer ${bearer}`);

  async function page(path: string, c?: IssuedCredential, bearer?: string): Promise<FeedPage> {
    const res = await get(path, c, bearer);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.headers['cache-control']).toBe('no-store');
    const body = JSON.parse(res.text) as FeedPage;
    expect(Object.keys(body)).toEqual(['data', 'paging']);
    expect(typeof body.paging.after).toBe('string');
    // The Link header names the same next page.
    const link = /^<([^>]+)>; rel="next"$/.exec(res.headers.link);
    expect(link).not.toBeNull();
    expect(new URL(link![1]).searchParams.get('after')).toBe(body.paging.after);
    return body;
  }

  /** Every page from `first` on, following the tokens until a page comes back empty. */
  async function follow(first: string, rest = '', c?: IssuedCredential, bearer?: string): Promise<{ seen: Visit[]; after: string; pages: number }> {
    const seen: Visit[] = [];
    let body = await page(first, c, bearer);
    let pages = 1;
    while (body.data.visits.length > 0) {
      seen.push(...body.data.visits);
      body = await page(`/visits/standard/changes?SvcClientId=1001${rest}&after=${encodeURIComponent(body.paging.after)}`, c, bearer);
      pages++;
    }
    return { seen, after: body.paging.after, pages };
  }

  async function errorsOf(path: string): Promise<string[]> {
    const res = await get(path);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe(PROBLEM);
    return (JSON.parse(res.text) as { errors: string[] }).errors;
  }

  const client1001 = (): VisitRecord[] => visits.filter((v) => v.clientId === 1001);

  it('gives every visit written since Since, in the order written, page by page, then an empty page', async () => {
    const { seen, pages } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=50`, '&Take=50');
    // The fixture imported client 1001's visits in one file, in this order.
    expect(seen.map((v) => v.visitId)).toEqual(client1001().map((v) => v.visitId));
    // Full pages, then the empty page that says nothing more was written.
    expect(pages).toBe(Math.ceil(client1001().length / 50) + 1);
    expect(Object.keys(seen[0])).toEqual([
      'visitId', 'clientId', 'clientName', 'brandName', 'branchId', 'branchCode', 'branchName', 'visitType',
      'questionnaireType', 'visitScore', 'recommendScore', 'recommendComment', 'visitDateTime', 'modificationDate',
      'visitSource', 'sections',
    ]);
  });

  it('gives the same visit objects as GET /visits/standard', async () => {
    const v = client1001()[5];
    const date = v.visitDateTime.slice(0, 10);
    const listed = await get(`/visits/standard?SvcClientId=1001&FromDate=${date}&ToDate=${date}&Skip=0&Take=1000`);
    const fromList = (listed.body as FeedPage).data.visits.find((x) => x.visitId === v.visitId);
    const { seen } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=1000`, '&Take=1000');
    expect(seen.find((x) => x.visitId === v.visitId)).toEqual(fromList);
  });

  it('adds guestId and optIns on /visits/plus/changes', async () => {
    const body = await page(`/visits/plus/changes?SvcClientId=1001&Since=${hourAgo()}&Take=3`);
    const of = client1001().slice(0, 3);
    expect(body.data.visits.map((v) => v.visitId)).toEqual(of.map((v) => v.visitId));
    for (const [i, v] of body.data.visits.entries()) {
      expect(v.guestId).toBe(of[i].guestId);
      expect(v.optIns).toEqual(of[i].optIns ?? { contactByEmail: null, joinMarketing: null });
    }
  });

  it('shows a changed visit once more, in its new state, and an unchanged re-import not at all', async () => {
    const { after } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=1000`, '&Take=1000');
    const [a, b] = client1001().slice(10, 12);
    await importVisits(t, [a, { ...b, visitScore: 12.25 }]);
    const next = await page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(after)}`);
    expect(next.data.visits.map((v) => [v.visitId, v.visitScore])).toEqual([[b.visitId, 12.25]]);
    const none = await page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(next.paging.after)}`);
    expect(none.data.visits).toEqual([]);
    // Waiting at the end keeps the place: the token of an empty page reads on from the same point.
    await importVisits(t, [{ ...a, recommendComment: 'Changed later' }]);
    const later = await page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(none.paging.after)}`);
    expect(later.data.visits.map((v) => [v.visitId, v.recommendComment])).toEqual([[a.visitId, 'Changed later']]);
    // A new first call sees each changed visit once, at its latest place.
    const { seen } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=1000`, '&Take=1000');
    expect(seen.map((v) => v.visitId).slice(-2)).toEqual([b.visitId, a.visitId]);
    expect(new Set(seen.map((v) => v.visitId)).size).toBe(seen.length);
  });

  it('starts at the end from a Since on the last day of the year 9999, local or with an offset into the year 10000, on both databases', async () => {
    for (const since of ['9999-12-31T23:59:59', '9999-12-31T12:00:00', '9999-12-31T23:30:00-01:00', '9999-12-31T23:59:59-12:00', '9999-12-31T23:59:59Z']) {
      const body = await page(`/visits/standard/changes?SvcClientId=1001&Take=5&Since=${encodeURIComponent(since)}`);
      expect([since, body.data.visits]).toEqual([since, []]);
    }
  });

  it('starts at the end when nothing was written since Since (a local time in the service zone)', async () => {
    const now = localDateTime(t.config.RESULTS_TIMEZONE, new Date(Date.now() + 3600_000));
    const body = await page(`/visits/standard/changes?SvcClientId=1001&Since=${now}`);
    expect(body.data.visits).toEqual([]);
    const c = client1001()[20];
    await importVisits(t, [{ ...c, visitScore: 1 }]);
    const next = await page(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(body.paging.after)}`);
    expect(next.data.visits.map((v) => v.visitId)).toEqual([c.visitId]);
  });

  it('reads a Since ahead of the clock from five minutes before it, as any other: the last minutes\' changes under five minutes ahead, none further', async () => {
    const c = client1001()[21];
    await importVisits(t, [{ ...c, visitScore: 2.5 }]);
    const ahead = (ms: number): string => new Date(Date.now() + ms).toISOString();
    const { seen } = await follow(`/visits/standard/changes?SvcClientId=1001&Take=1000&Since=${ahead(2 * 60_000)}`, '&Take=1000');
    expect(seen.at(-1)).toMatchObject({ visitId: c.visitId, visitScore: 2.5 });
    const far = await page(`/visits/standard/changes?SvcClientId=1001&Take=1000&Since=${ahead(6 * 60_000)}`);
    expect(far.data.visits).toEqual([]);
  });

  it('filters by SvcBrandId and VisitTypes, and always by what the credential may read', async () => {
    const since = hourAgo();
    const { seen: brand6 } = await follow(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=6&Since=${since}`, '&SvcBrandId=6');
    expect(brand6.length).toBeGreaterThan(0);
    expect(new Set(brand6.map((v) => v.brandName))).toEqual(new Set(['Acme Pizzeria']));
    const { seen: mv } = await follow(`/visits/standard/changes?SvcClientId=1001&VisitTypes=mv&Since=${since}`, '&VisitTypes=mv');
    expect(new Set(mv.map((v) => v.visitType))).toEqual(new Set(['MV']));
    expect(mv.length).toBe(client1001().filter((v) => v.visitType === 'MV').length);

    const restricted = await issueCredential(t, { brands: [5], visitTypes: ['OF'] });
    const bearer = await tokenFor(t.http, restricted);
    const { seen } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${since}`, '', restricted, bearer);
    const expected = client1001().filter((v) => v.brandId === 5 && v.visitType === 'OF');
    expect(new Set(seen.map((v) => v.visitId))).toEqual(new Set(expected.map((v) => v.visitId)));
    const refused = await get(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=6&Since=${since}`, restricted, bearer);
    expect(refused.status).toBe(403);
    expect(refused.headers['content-type']).toBe(PROBLEM);
  });

  it('refuses a token given out before the credential could read more brands or visit types, and reads on after a narrowing', async () => {
    const since = hourAgo();
    const restricted = await issueCredential(t, { brands: [5], visitTypes: ['OF'] });
    const bearer = await tokenFor(t.http, restricted);
    const { seen, after } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${since}`, '', restricted, bearer);
    const credentials = t.app.get(CredentialsService);
    const regrant = async (changes: Parameters<CredentialsService['update']>[1]): Promise<void> => {
      await credentials.update(restricted.clientId, changes);
      t.app.get(AuthCacheService).forgetCredential(restricted.clientId);
    };
    const next = `/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(after)}`;

    // Given brand 6 too: its visits, written before the token, would never be on a page after it.
    await regrant({ brands: [5, 6] });
    const widened = await get(next, restricted, bearer);
    expect(widened.status).toBe(400);
    expect(widened.headers['content-type']).toBe(PROBLEM);
    expect(JSON.parse(widened.text)).toMatchObject({
      errors: [
        "'after' was given out when the credential could read fewer brands or visit types than it may now: the visits of those it gained that were written before are not on the feed after it. Start again from 'Since' and read the feed through.",
      ],
    });
    // Read again from Since, the copy takes in brand 6's visits; then every visit type too.
    const again = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${since}`, '', restricted, bearer);
    expect(seen.some((v) => v.brandName === 'Acme Pizzeria')).toBe(false);
    expect(again.seen.some((v) => v.brandName === 'Acme Pizzeria')).toBe(true);
    await regrant({ visitTypes: null });
    expect((await get(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(again.after)}`, restricted, bearer)).status).toBe(400);

    // Narrowed back: a token of the wider selection reads on (the entitlement is applied on every page).
    await regrant({ brands: [5], visitTypes: ['OF'] });
    const narrowed = await page(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(again.after)}`, restricted, bearer);
    expect(narrowed.data.visits).toEqual([]);
    // A token of a query filtered within what the credential read before is not one of a wider selection.
    const { after: ofBrand5 } = await follow(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&Since=${since}`, '&SvcBrandId=5', restricted, bearer);
    await regrant({ brands: [5, 6] });
    expect((await get(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&after=${encodeURIComponent(ofBrand5)}`, restricted, bearer)).status).toBe(200);
    // A brand of the credential's other client gained is none of client 1001's feed.
    const twoClients = await issueCredential(t, { clients: [1001, 1002], brands: [5] });
    const twoBearer = await tokenFor(t.http, twoClients);
    const { after: of1001 } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${since}`, '', twoClients, twoBearer);
    await credentials.update(twoClients.clientId, { brands: [5, 21] });
    t.app.get(AuthCacheService).forgetCredential(twoClients.clientId);
    expect((await get(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(of1001)}`, twoClients, twoBearer)).status).toBe(200);
    await credentials.update(twoClients.clientId, { brands: [5, 6, 21] });
    t.app.get(AuthCacheService).forgetCredential(twoClients.clientId);
    expect((await get(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(of1001)}`, twoClients, twoBearer)).status).toBe(400);
    // Tokens given out before they held a selection (one number) are taken as before.
    const tokens = PageTokens.fromConfig(t.config);
    const old = tokens.encode('changes:standard:1001::', [await t.app.get(VisitsRepository).changeHead(1001)]);
    expect((await get(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(old)}`, restricted, bearer)).status).toBe(200);
  });

  it('moves a filtered feed past the writes its filters leave out, and still gives every one they let through', async () => {
    const tokens = PageTokens.fromConfig(t.config);
    const position = (token: string): number => {
      const opened = tokens.open(token);
      expect(opened?.scope).toBe('changes:standard:1001:6:');
      return opened?.position[0] as number;
    };
    const { after: atEnd } = await follow(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=6&Since=${hourAgo()}`, '&SvcBrandId=6');
    const [other, mine] = [client1001().find((v) => v.brandId === 5)!, client1001().find((v) => v.brandId === 6)!];
    await importVisits(t, [{ ...other, visitScore: 3.5 }]);
    const skipped = await page(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=6&after=${encodeURIComponent(atEnd)}`);
    expect(skipped.data.visits).toEqual([]);
    // The write of brand 5 is behind the token now: the next poll does not look at it again.
    expect(position(skipped.paging.after)).toBeGreaterThan(position(atEnd));
    await importVisits(t, [{ ...mine, visitScore: 4.5 }]);
    const next = await page(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=6&after=${encodeURIComponent(skipped.paging.after)}`);
    expect(next.data.visits.map((v) => [v.visitId, v.visitScore])).toEqual([[mine.visitId, 4.5]]);
  });

  it('reports a visit that a change moved out of a filtered selection as removed, once, and one moved back as a visit', async () => {
    const five = client1001().find((v) => v.brandId === 5)!;
    const six = client1001().find((v) => v.brandId === 6)!;
    // Visits of this test's own, so that the fixture's stay as they are.
    const [a, b] = [{ ...five, visitId: 880_001 }, { ...five, visitId: 880_002 }];
    const toSix = (v: VisitRecord, score: number): VisitRecord => ({ ...v, brandId: 6, branchId: six.branchId, visitScore: score });
    const restricted = await issueCredential(t, { brands: [5] });
    const bearer = await tokenFor(t.http, restricted);
    const feeds = {
      query: (after: string) => page(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&Take=1000&after=${encodeURIComponent(after)}`),
      credential: (after: string) => page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(after)}`, restricted, bearer),
      all: (after: string) => page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(after)}`),
    };
    const ends = {
      query: (await follow(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&Since=${hourAgo()}&Take=1000`, '&SvcBrandId=5&Take=1000')).after,
      credential: (await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=1000`, '&Take=1000', restricted, bearer)).after,
      all: (await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=1000`, '&Take=1000')).after,
    };
    await importVisits(t, [a, b]);
    const added = { query: await feeds.query(ends.query), credential: await feeds.credential(ends.credential), all: await feeds.all(ends.all) };
    for (const body of Object.values(added)) {
      expect(body.data.visits.map((v) => v.visitId)).toEqual([a.visitId, b.visitId]);
      expect(body.data).toMatchObject({ removed: [] });
    }

    // a leaves brand 5; b changes within it.
    await importVisits(t, [toSix(a, 12.5), { ...b, visitScore: 13.5 }]);
    for (const feed of ['query', 'credential'] as const) {
      const body = await feeds[feed](added[feed].paging.after);
      expect({ feed, visits: body.data.visits.map((v) => v.visitId), removed: (body.data as { removed?: unknown }).removed }).toEqual({
        feed,
        visits: [b.visitId],
        removed: [{ visitId: a.visitId }],
      });
      // Told once: the next page has nothing more.
      const next = await feeds[feed](body.paging.after);
      expect([next.data.visits, (next.data as { removed?: unknown }).removed]).toEqual([[], []]);
    }
    const whole = await feeds.all(added.all.paging.after);
    expect(whole.data.visits.map((v) => [v.visitId, v.brandName, v.visitScore])).toEqual([
      [a.visitId, 'Acme Pizzeria', 12.5],
      [b.visitId, 'Acme Grill', 13.5],
    ]);
    expect((whole.data as { removed?: unknown }).removed).toEqual([]);
    // A page of one: the removal takes the place its write has in the order.
    const one = await page(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&Take=1&after=${encodeURIComponent(added.query.paging.after)}`);
    expect([one.data.visits, (one.data as { removed?: unknown }).removed]).toEqual([[], [{ visitId: a.visitId }]]);
    const two = await page(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&Take=1&after=${encodeURIComponent(one.paging.after)}`);
    expect([two.data.visits.map((v) => v.visitId), (two.data as { removed?: unknown }).removed]).toEqual([[b.visitId], []]);

    // Back in brand 5: a reader from before the move sees it as a visit, not as removed.
    await importVisits(t, [{ ...a, visitScore: 14.5 }]);
    const back = await feeds.query(added.query.paging.after);
    expect(back.data.visits.map((v) => [v.visitId, v.visitScore])).toEqual([
      [b.visitId, 13.5],
      [a.visitId, 14.5],
    ]);
    expect((back.data as { removed?: unknown }).removed).toEqual([]);
  });

  it('reports a removal only for the write that took a visit out of the selection, once, with brand and type filters together', async () => {
    const five = client1001().find((v) => v.brandId === 5)!;
    const six = client1001().find((v) => v.brandId === 6)!;
    // No guest: their types change, and only an OF visit may carry one.
    const x: VisitRecord = { ...six, visitId: 881_001, visitType: 'OF', guestId: null };
    const y: VisitRecord = { ...five, visitId: 881_002, visitType: 'MV', guestId: null };
    await importVisits(t, [x, y]);
    const end = async (query: string): Promise<string> => (await follow(`/visits/standard/changes?SvcClientId=1001&${query}&Since=${hourAgo()}&Take=1000`, `&${query}&Take=1000`)).after;
    const removed = async (query: string, after: string): Promise<unknown> =>
      (await page(`/visits/standard/changes?SvcClientId=1001&${query}&Take=1000&after=${encodeURIComponent(after)}`)).data;
    const [both, brandFive, typesMvOf] = [await end('SvcBrandId=6&VisitTypes=OF'), await end('SvcBrandId=5'), await end('SvcBrandId=5&VisitTypes=MV,OF')];

    // x leaves brand 6 and OF by its type only; y changes type inside brand 5 (MV to OF), then leaves brand 5.
    await importVisits(t, [{ ...x, visitType: 'TA' }, { ...y, visitType: 'OF' }]);
    await importVisits(t, [{ ...y, brandId: 6, branchId: six.branchId }]);
    expect(await removed('SvcBrandId=6&VisitTypes=OF', both)).toMatchObject({ visits: [], removed: [{ visitId: x.visitId }] });
    expect(await removed('SvcBrandId=5', brandFive)).toMatchObject({ visits: [], removed: [{ visitId: y.visitId }] });
    expect(await removed('SvcBrandId=5&VisitTypes=MV,OF', typesMvOf)).toMatchObject({ visits: [], removed: [{ visitId: y.visitId }] });
    // A change inside the selection is no removal: y back in brand 5, then MV to OF again.
    const back = await end('SvcBrandId=5&VisitTypes=MV,OF');
    await importVisits(t, [{ ...y, visitType: 'MV' }]);
    await importVisits(t, [{ ...y, visitType: 'OF', visitScore: 3 }]);
    const inside = (await removed('SvcBrandId=5&VisitTypes=MV,OF', back)) as { visits: { visitId: number }[]; removed: unknown[] };
    expect([inside.visits.map((v) => v.visitId), inside.removed]).toEqual([[y.visitId], []]);
  });

  it('loses no removal to an import committed while a filtered page is read (between its departures and its visits)', async () => {
    const five = client1001().find((v) => v.brandId === 5)!;
    const six = client1001().find((v) => v.brandId === 6)!;
    const [out, into] = [{ ...five, visitId: 882_001 }, { ...six, visitId: 882_002 }];
    await importVisits(t, [out, into]);
    const end = (await follow(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&Since=${hourAgo()}&Take=1000`, '&SvcBrandId=5&Take=1000')).after;
    // One import, in this order: `out` leaves brand 5, `into` enters it (the later sequence).
    // It commits after the page has read its departures and before it reads its visits.
    const repo = t.app.get(VisitsRepository);
    const departures = repo.departures.bind(repo);
    const spy = jest.spyOn(repo, 'departures').mockImplementationOnce(async (q) => {
      const read = await departures(q);
      await importVisits(t, [
        { ...out, brandId: 6, branchId: six.branchId },
        { ...into, brandId: 5, branchId: five.branchId },
      ]);
      return read;
    });
    const copy = new Set<number>([out.visitId]);
    let after = end;
    for (let pages = 0; pages < 4; pages++) {
      const body = await page(`/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&Take=1000&after=${encodeURIComponent(after)}`);
      for (const v of body.data.visits) copy.add(v.visitId);
      for (const r of (body.data as unknown as { removed: { visitId: number }[] }).removed) copy.delete(r.visitId);
      after = body.paging.after;
    }
    expect(spy).toHaveBeenCalled();
    spy.mockRestore();
    expect([...copy].sort()).toEqual([into.visitId]);
  });

  it('refuses a token that was altered, made for another query, variant or client', async () => {
    const body = await page(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=2`);
    const token = encodeURIComponent(body.paging.after);
    const [payload, signature] = body.paging.after.split('.');
    // One character changed for another (the one before last: the last may hold spare bits).
    const forged = `${payload.slice(0, -2)}${payload.at(-2) === 'A' ? 'B' : 'A'}${payload.slice(-1)}.${signature}`;
    expect(await errorsOf(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(forged)}`)).toEqual([
      "'after' is not a valid page token.",
    ]);
    expect(await errorsOf(`/visits/standard/changes?SvcClientId=1001&after=not-a-token`)).toEqual(["'after' is not a valid page token."]);
    for (const other of [
      `/visits/standard/changes?SvcClientId=1001&SvcBrandId=5&after=${token}`,
      `/visits/standard/changes?SvcClientId=1001&VisitTypes=MV&after=${token}`,
      `/visits/plus/changes?SvcClientId=1001&after=${token}`,
    ]) {
      expect(await errorsOf(other)).toEqual(["'after' is a page token of another query."]);
    }
    // The token is one of the query's parameters: its rule is weighed with the others, before the entitlements.
    expect(await errorsOf('/visits/standard/changes?SvcClientId=abc&after=not-a-token&VisitTypes=M1')).toEqual([
      "'SvcClientId' must be an integer: 'abc'.",
      "'after' is not a valid page token.",
      "'VisitTypes' must be 2 alpha characters: 'M1'.",
    ]);
    const unentitled = await get('/visits/plus/changes?SvcClientId=1002&after=not-a-token');
    expect(unentitled.status).toBe(400);
    expect(unentitled.headers['content-type']).toBe(PROBLEM);
    expect(JSON.parse(unentitled.text)).toMatchObject({ status: 400, errors: ["'after' is not a valid page token."] });
    const both = await issueCredential(t, { clients: [1001, 1002] });
    const res = await get(`/visits/standard/changes?SvcClientId=1002&after=${token}`, both, await tokenFor(t.http, both));
    expect(res.status).toBe(400);
    expect((JSON.parse(res.text) as { errors: string[] }).errors).toEqual(["'after' is a page token of another query."]);
  });

  it('refuses a token given out after the backup a restore went back to, also once the restored data is written to; one of before the backup reads on', async () => {
    const db = t.app.get(DataSource);
    const { after: beforeBackup } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&Take=1000`, '&Take=1000');
    const [{ s: backup }] = await db.query<{ s: number | string }[]>('SELECT change_seq AS s FROM clients WHERE id = 1001');
    // Written after the backup: the partner reads it and holds the token after it.
    const [a, b] = client1001().slice(20, 22);
    await importVisits(t, [{ ...a, recommendComment: 'Before the restore' }]);
    const read = await page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(beforeBackup)}`);
    expect(read.data.visits.map((v) => [v.visitId, v.recommendComment])).toEqual([[a.visitId, 'Before the restore']]);
    // The restore: the client's write sequence as the backup had it (the block of numbers the
    // write above took, which the backup did not hold, goes with the next write), then a write
    // moving the sequence past the token's number.
    await db.query(`UPDATE clients SET change_seq = ${Number(backup)} WHERE id = 1001`);
    await importVisits(t, [{ ...b, recommendComment: 'After the restore' }]);
    const lost = await get(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(read.paging.after)}`);
    expect(lost.status).toBe(400);
    expect(lost.headers['content-type']).toBe(PROBLEM);
    expect(JSON.parse(lost.text)).toMatchObject({
      status: 400,
      errors: ["'after' is further on than the feed: the service's data was restored from an earlier backup. Start again from 'Since' (a time before the backup was taken) and read the feed through."],
    });
    // A token of before the backup is one the restored database gave out: it reads the write after the restore.
    const next = await page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(beforeBackup)}`);
    expect(next.data.visits.map((v) => [v.visitId, v.recommendComment])).toContainEqual([b.visitId, 'After the restore']);
    // And so does the token of that page, at the head.
    expect((await page(`/visits/standard/changes?SvcClientId=1001&Take=1000&after=${encodeURIComponent(next.paging.after)}`)).data.visits).toEqual([]);
  });

  it('names data written after a restore by another ETag than any given out before it, though as many writes were made since the backup', async () => {
    const db = t.app.get(DataSource);
    const a = client1001()[24];
    const date = a.visitDateTime.slice(0, 10);
    const url = `/visits/standard?SvcClientId=1001&FromDate=${date}&ToDate=${date}&Skip=0&Take=1000`;
    const [backup] = await db.query<{ s: number | string; v: number | string }[]>('SELECT change_seq AS s, data_version AS v FROM clients WHERE id = 1001');
    // One write after the backup: a partner holds the page and its ETag.
    await importVisits(t, [{ ...a, recommendComment: 'Written after the backup' }]);
    const held = await get(url);
    expect(held.status).toBe(200);
    // The restore, then one write of other data: as many writes since the backup as before it.
    await db.query(`UPDATE clients SET change_seq = ${Number(backup.s)}, data_version = ${Number(backup.v)} WHERE id = 1001`);
    await importVisits(t, [{ ...a, recommendComment: 'Written after the restore' }]);
    const now = await get(url).set('If-None-Match', held.headers.etag);
    expect(now.status).toBe(200);
    expect(now.headers.etag).not.toBe(held.headers.etag);
    expect(now.text).toContain('Written after the restore');
  });

  it('refuses a token further on than the feed, as one issued before the data was restored from a backup is', async () => {
    const { after } = await follow(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}`);
    const db = t.app.get(DataSource);
    // The restore: the client's write sequence as an earlier backup had it.
    await db.query('UPDATE clients SET change_seq = change_seq - 3 WHERE id = 1001');
    try {
      const res = await get(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(after)}`);
      expect(res.status).toBe(400);
      expect(res.headers['content-type']).toBe(PROBLEM);
      expect(JSON.parse(res.text)).toMatchObject({
        status: 400,
        errors: ["'after' is further on than the feed: the service's data was restored from an earlier backup. Start again from 'Since' (a time before the backup was taken) and read the feed through."],
      });
    } finally {
      await db.query('UPDATE clients SET change_seq = change_seq + 3 WHERE id = 1001');
    }
    // At the head, the same token is a page like any other.
    expect((await page(`/visits/standard/changes?SvcClientId=1001&after=${encodeURIComponent(after)}`)).data.visits).toEqual([]);
  });

  it('lists every broken rule at once, with names matched case-insensitively', async () => {
    expect(await errorsOf(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}&visittypes[]=MV`)).toEqual([
      "'visittypes[]' is written as an array, which no parameter is: send 'VisitTypes' once (a list as one comma-separated value).",
    ]);
    expect(await errorsOf('/visits/standard/changes?SvcClientId=abc&Take=0')).toEqual([
      "'SvcClientId' must be an integer: 'abc'.",
      "'Take' must be greater than '0'.",
      "Either 'Since' or 'after' must be given.",
    ]);
    expect(await errorsOf(`/visits/standard/changes?svcclientid=1001&since=${hourAgo()}&AFTER=x&take=1001`)).toEqual([
      "'after' is not a valid page token.",
      "'Take' must be less than or equal to '1000'.",
      "Only one of 'Since' and 'after' may be given.",
    ]);
    expect(await errorsOf('/visits/standard/changes?SvcClientId=1001&Since=2026-13-01T00:00:00Z')).toEqual([
      "'Since' is not in the expected format yyyy-mm-ddThh:mm:ss, with an optional offset (Z or +hh:mm): '2026-13-01T00:00:00Z'.",
    ]);
    expect(await errorsOf('/visits/standard/changes?SvcClientId=1001&VisitTypes=M1&Since=yesterday')).toEqual([
      "'Since' is not in the expected format yyyy-mm-ddThh:mm:ss, with an optional offset (Z or +hh:mm): 'yesterday'.",
      "'VisitTypes' must be 2 alpha characters: 'M1'.",
    ]);
  });

  it('refuses a Since older than the feed keeps, naming the oldest point', async () => {
    const old = new Date(Date.now() - 91 * 86_400_000).toISOString();
    const [message] = await errorsOf(`/visits/standard/changes?SvcClientId=1001&Since=${old}`);
    const oldest = /^'Since' must not be earlier than '(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)': the feed keeps 90 days\.$/.exec(message);
    expect(oldest).not.toBeNull();
    const expected = Date.now() - 90 * 86_400_000;
    expect(Math.abs(Date.parse(oldest![1]) - expected)).toBeLessThan(60_000);
  });

  it('needs the variant scope and an entitled client', async () => {
    const standardOnly = await tokenFor(t.http, partner, 'svc-results-api visits/standard.read');
    const res = await get(`/visits/plus/changes?SvcClientId=1001&Since=${hourAgo()}`, partner, standardOnly);
    expect(res.status).toBe(403);
    expect(res.headers['www-authenticate']).toContain('insufficient_scope');
    const other = await get(`/visits/standard/changes?SvcClientId=1002&Since=${hourAgo()}`);
    expect(other.status).toBe(403);
    const anonymous = await request(t.http).get(`/visits/standard/changes?SvcClientId=1001&Since=${hourAgo()}`);
    expect(anonymous.status).toBe(401);
  });
});
