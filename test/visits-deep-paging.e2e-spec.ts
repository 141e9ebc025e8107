import request from 'supertest';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays } from '../src/common/clock.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import { MARK_STRIDE } from '../src/visits/visits.service.js';
import type { TestApp } from './helpers/test-app.js';
import { expectedIds, importVisits, startVisitsApp, type VisitRecord } from './helpers/visits-fixture.js';

/**
 * Pages beyond the first MARK_STRIDE rows of a selection start from a mark the service finds
 * in the index (a seek) instead of an OFFSET from the start. They must be exactly the pages
 * an OFFSET gives: same rows, same order, ties on visitDateTime included, filters included.
 */
describe(`GET /visits/standard deep pages (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let visits: VisitRecord[];
  let today: string;
  let partner: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    ({ t, visits, today, partner, token } = await startVisitsApp());
    // 2,700 more over four days, in bursts of nine at the same second with ids out of order.
    const more: VisitRecord[] = [];
    for (let i = 0; i < 2700; i++) {
      const template = visits[i % 90];
      const date = addDays(today, -(2 + (i % 4)));
      more.push({
        ...template,
        visitId: 200_000 + ((i * 7919) % 100_000),
        visitDateTime: `${date}T1${Math.floor(i / 540)}:${String(Math.floor(i / 9) % 60).padStart(2, '0')}:00`,
        modificationDate: `${date}T23:00:00`,
        completedAt: `${date}T22:00:00Z`,
      });
    }
    await importVisits(t, more);
    visits = [...visits, ...more];
  });
  afterAll(async () => {
    await t.close();
  });

  const ids = async (query: string, c: IssuedCredential = partner, bearer = token): Promise<number[]> => {
    const res = await request(t.http).get(`/visits/standard?${query}`).set('svc-api-key', c.apiKey).set('Authorization', `Bearer ${bearer}`);
    expect(res.status).toBe(200);
    return (res.body.data.visits as { visitId: number }[]).map((v) => v.visitId);
  };

  it.each([
    ['all visits', '', undefined, undefined],
    ['one brand and two visit types', '&SvcBrandId=5&VisitTypes=MV,OF', 5, ['MV', 'OF']],
  ])('gives the pages of one ordered list at any Skip: %s', async (_, filters, brandId, types) => {
    const from = addDays(today, -31);
    const to = addDays(today, -1);
    const whole = expectedIds(visits, { clientId: 1001, from, to, brandId, types });
    expect(whole.length).toBeGreaterThan(MARK_STRIDE + 200);
    const page = (skip: number, take: number): Promise<number[]> =>
      ids(`SvcClientId=1001&FromDate=${from}&ToDate=${to}&Skip=${skip}&Take=${take}${filters}`);

    // A jump far in first (the marks are found on the way), then in order, then around.
    expect(await page(whole.length - 5, 10)).toEqual(whole.slice(-5));
    const paged: number[] = [];
    for (let skip = 0; skip < whole.length; skip += 333) paged.push(...(await page(skip, 333)));
    expect(paged).toEqual(whole);
    for (const skip of [MARK_STRIDE - 1, MARK_STRIDE, MARK_STRIDE + 1, 2 * MARK_STRIDE - 3, whole.length - 1, whole.length, whole.length + 5000]) {
      expect(await page(skip, 4)).toEqual(whole.slice(skip, skip + 4));
    }
  });

  it("never serves one credential a deep page or a page mark found for another's entitlement", async () => {
    const from = addDays(today, -31);
    const to = addDays(today, -1);
    const grill = await issueCredential(t, { brands: [5], scopes: ['visits/standard.read'] });
    const feedback = await issueCredential(t, { visitTypes: ['OF'], scopes: ['visits/standard.read'] });
    const readers: [string, IssuedCredential, string, { brandIds?: number[]; types?: string[] }][] = [
      ['unrestricted', partner, token, {}],
      ['brand 5', grill, await tokenFor(t.http, grill), { brandIds: [5] }],
      ['type OF', feedback, await tokenFor(t.http, feedback), { types: ['OF'] }],
    ];
    const whole = expectedIds(visits, { clientId: 1001, from, to });
    expect(expectedIds(visits, { clientId: 1001, from, to, brandIds: [5] }).length).toBeGreaterThan(MARK_STRIDE + 200);
    // The same URLs for all three, the unrestricted credential first: its pages and marks are found first.
    for (const skip of [MARK_STRIDE + 100, 2 * MARK_STRIDE + 7, whole.length - 3, 150]) {
      for (const [name, c, bearer, entitled] of readers) {
        const expected = expectedIds(visits, { clientId: 1001, from, to, ...entitled }).slice(skip, skip + 5);
        const got = await ids(`SvcClientId=1001&FromDate=${from}&ToDate=${to}&Skip=${skip}&Take=5`, c, bearer);
        expect([name, skip, got]).toEqual([name, skip, expected]);
      }
    }
  });

  it('finds new marks after an import moves every row after its first day', async () => {
    const from = addDays(today, -31);
    const to = addDays(today, -1);
    const page = (skip: number): Promise<number[]> => ids(`SvcClientId=1001&FromDate=${from}&ToDate=${to}&Skip=${skip}&Take=5`);
    const before = expectedIds(visits, { clientId: 1001, from, to });
    expect(await page(2 * MARK_STRIDE + 10)).toEqual(before.slice(2 * MARK_STRIDE + 10, 2 * MARK_STRIDE + 15));
    // 300 visits on the window's first day shift every later position by 300.
    const early = visits.filter((v) => v.clientId === 1001).slice(0, 300).map((v, i) => ({
      ...v,
      visitId: 400_000 + i,
      visitDateTime: `${from}T08:00:00`,
      modificationDate: `${from}T23:00:00`,
      completedAt: `${from}T22:00:00Z`,
    }));
    await importVisits(t, early);
    visits = [...visits, ...early];
    const after = expectedIds(visits, { clientId: 1001, from, to });
    expect(after.length).toBe(before.length + 300);
    for (const skip of [MARK_STRIDE + 3, 2 * MARK_STRIDE + 10]) {
      expect(await page(skip)).toEqual(after.slice(skip, skip + 5));
      expect(await page(skip)).not.toEqual(before.slice(skip, skip + 5));
    }
  });
});
