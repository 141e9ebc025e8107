import fc from 'fast-check';
import request from 'supertest';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays } from '../src/common/clock.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { seedVisits } from './helpers/visits-fixture.js';
import { propertyRuns } from './helpers/property-runs.js';

const INSTANCE = /^urn:svc:api:results:error:[0-9a-f-]{36}$/;

/**
 * Whatever a caller puts in the visits parameters, the answer is a 200 page, a 400 problem
 * listing the broken rules, or a 403 problem: never a 500, never another shape.
 */
describe(`visits parameters under arbitrary input (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;
  let today: string;

  beforeAll(async () => {
    t = await startTestApp();
    ({ today } = await seedVisits(t));
    partner = await issueCredential(t, { clients: [1001], brands: [5, 6], visitTypes: ['MV', 'OF'] });
    token = await tokenFor(t.http, partner);
  });
  afterAll(async () => {
    await t.close();
  });

  const names = ['SvcClientId', 'FromDate', 'ToDate', 'Skip', 'Take', 'SvcBrandId', 'VisitTypes'];

  const dateLike = fc.oneof(
    fc.integer({ min: -400, max: 400 }).map((n) => addDays(today, n)),
    fc.date({ min: new Date('1900-01-01'), max: new Date('2200-12-31'), noInvalidDate: true }).map((d) => d.toISOString().slice(0, 10)),
    fc.tuple(fc.integer({ min: 0, max: 9999 }), fc.integer({ min: 0, max: 99 }), fc.integer({ min: 0, max: 99 })).map(
      ([y, m, d]) => `${String(y).padStart(4, '0')}-${String(m).padStart(2, '0')}-${String(d).padStart(2, '0')}`,
    ),
  );
  const numberLike = fc.oneof(
    fc.integer({ min: -5, max: 2000 }).map(String),
    fc.double().map(String),
    fc.constantFrom('', ' ', '1e3', '0x10', '00012', '+5', '9007199254740993', '１２'),
  );
  const typesLike = fc.oneof(
    fc.array(fc.constantFrom('MV', 'OF', 'TA', 'mv', 'ZZ', 'M', 'M1', '', 'ÄÖ'), { maxLength: 4 }).map((a) => a.join(',')),
    fc.string(),
  );
  const value = fc.oneof(dateLike, numberLike, typesLike, fc.string({ unit: 'binary' }), fc.string({ unit: 'grapheme' }));
  const nameVariant = fc.constantFrom(...names).chain((n) =>
    fc.constantFrom(n, n.toLowerCase(), n.toUpperCase(), n.replace(/^./, (c) => c.toLowerCase())),
  );
  const params = fc.array(fc.tuple(fc.oneof(nameVariant, fc.string()), value), { maxLength: 9 });

  // Raw query text as a careless client might send it: stray %, &, =, duplicated names.
  const rawQuery = fc
    .array(fc.oneof(fc.constantFrom('%', '%Z', '%E0%A4%A', '&', '=', '+', ';', '[]', 'SvcClientId=', 'take=', 'skip=1'), fc.stringMatching(/^[!-~]{0,6}$/)), {
      maxLength: 12,
    })
    .map((parts) => parts.join('').replace(/#/g, ''));

  it('answers 200, 400 or 403 with the documented body', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('standard', 'plus'), fc.oneof(params, rawQuery), async (variant, pairs) => {
        const query = typeof pairs === 'string' ? pairs : new URLSearchParams(pairs).toString();
        const res = await request(t.http)
          .get(`/visits/${variant}?${query}`)
          .set('svc-api-key', partner.apiKey)
          .set('Authorization', `Bearer ${token}`);
        if (res.status === 200) {
          expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
          expect(Array.isArray(res.body.data.visits)).toBe(true);
          return;
        }
        expect([400, 403]).toContain(res.status);
        expect(res.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        const body = JSON.parse(res.text);
        expect(body.status).toBe(res.status);
        expect(body.instance).toMatch(INSTANCE);
        if (res.status === 400) {
          expect(body.errors.length).toBeGreaterThan(0);
          for (const message of body.errors) expect(typeof message).toBe('string');
        } else {
          expect(body.detail).toMatch(/^The credential is not entitled to /);
        }
      }),
      propertyRuns(300),
    );
  });

  it('answers 200 for every well-formed query within the entitlements', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.integer({ min: 1, max: 60 }),
        fc.integer({ min: 0, max: 30 }),
        fc.integer({ min: 0, max: 200 }),
        fc.integer({ min: 1, max: 1000 }),
        fc.subarray(['MV', 'OF']),
        fc.option(fc.constantFrom(5, 6), { nil: undefined }),
        async (end, span, skip, take, types, brand) => {
          const to = addDays(today, -end);
          const from = addDays(to, -span);
          const q = new URLSearchParams({ SvcClientId: '1001', FromDate: from, ToDate: to, Skip: String(skip), Take: String(take) });
          if (types.length > 0) q.set('VisitTypes', types.join(','));
          if (brand !== undefined) q.set('SvcBrandId', String(brand));
          const res = await request(t.http).get(`/visits/standard?${q.toString()}`).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
          expect(res.status).toBe(200);
          expect(res.body.data.visits.length).toBeLessThanOrEqual(take);
        },
      ),
      propertyRuns(100),
    );
  });
});
