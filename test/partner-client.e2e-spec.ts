import createClient from 'openapi-fetch';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays } from '../src/common/clock.js';
import type { paths } from './generated/results-api.js';
import { issueCredential } from './helpers/auth.js';
import { startListeningTestApp, type TestApp } from './helpers/test-app.js';
import { expectedIds, seedVisits, type VisitRecord } from './helpers/visits-fixture.js';

/**
 * A partner's nightly job written only against the published contract: a client generated
 * from openapi/openapi.json (openapi-typescript types, openapi-fetch) gets a token, pages
 * through the last 31 days of visits and maps them to the partner's own branch codes.
 */
describe(`a partner's nightly job on the generated client (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let base: string;
  let partner: IssuedCredential;
  let visits: VisitRecord[];
  let today: string;

  beforeAll(async () => {
    ({ t, base } = await startListeningTestApp());
    ({ visits, today } = await seedVisits(t));
    partner = await issueCredential(t, { scopes: ['visits/standard.read', 'branches/standard.read'] });
  });
  afterAll(async () => {
    await t.close();
  });

  it('pulls every visit of the window page by page, with branch codes', async () => {
    // Every operation but the public ones needs the API key (the contract's security): once, for the client.
    const api = createClient<paths>({ baseUrl: base, headers: { 'svc-api-key': partner.apiKey } });

    const token = await api.POST('/connect/token', {
      body: { grant_type: 'client_credentials', client_id: partner.clientId, client_secret: partner.clientSecret },
      bodySerializer: (body) => new URLSearchParams(body as Record<string, string>).toString(),
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
    });
    expect(token.response.status).toBe(200);
    const auth = { Authorization: `Bearer ${token.data!.access_token}` };

    const branches = await api.GET('/branches', { params: { query: { SvcClientId: 1001 } }, headers: auth });
    expect(branches.response.status).toBe(200);
    const codes = new Map(branches.data!.map((b) => [b.id, b.branchCode]));

    const from = addDays(today, -31);
    const to = addDays(today, -1);
    const take = 10;
    const pulled: { visitId: number; branchCode: string | null | undefined }[] = [];
    for (let skip = 0; ; skip += take) {
      const page = await api.GET('/visits/standard', {
        params: { query: { SvcClientId: 1001, FromDate: from, ToDate: to, Skip: skip, Take: take } },
        headers: auth,
      });
      expect(page.response.status).toBe(200);
      const got = page.data!.data.visits;
      pulled.push(...got.map((v) => ({ visitId: v.visitId, branchCode: codes.get(v.branchId) })));
      if (got.length < take) break;
    }
    expect(pulled.map((v) => v.visitId)).toEqual(expectedIds(visits, { clientId: 1001, from, to }));
    expect(new Set(pulled.map((v) => v.branchCode))).toEqual(new Set(['LDS-01', null]));

    const refused = await api.GET('/visits/standard', {
      params: { query: { SvcClientId: 1001, FromDate: to, ToDate: from, Skip: 0, Take: take } },
      headers: auth,
    });
    expect(refused.response.status).toBe(400);
    expect(refused.error).toMatchObject({ status: 400, errors: ["'ToDate' must be greater than or equal to 'FromDate'."] });
  });
});
