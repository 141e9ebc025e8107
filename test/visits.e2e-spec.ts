import request from 'supertest';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { addDays } from '../src/common/clock.js';
import { issueCredential, tokenFor } from './helpers/auth.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';
import { expectedIds, importBranches, importVisits, seedVisits, startVisitsApp, type VisitRecord } from './helpers/visits-fixture.js';

const STANDARD_FIELDS = [
  'visitId', 'clientId', 'clientName', 'brandName', 'branchId', 'branchCode', 'branchName', 'visitType',
  'questionnaireType', 'visitScore', 'recommendScore', 'recommendComment', 'visitDateTime', 'modificationDate',
  'visitSource', 'sections',
];
const PROBLEM = 'application/problem+json; charset=utf-8';

interface Visit {
  visitId: number;
  modificationDate: string;
  visitScore: number;
  [field: string]: unknown;
}

describe(`GET /visits/standard and /visits/plus (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let visits: VisitRecord[];
  let today: string;
  let partner: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    ({ t, visits, today, partner, token } = await startVisitsApp());
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (path: string, c: IssuedCredential = partner, bearer = token) =>
    request(t.http).get(path).set('svc-api-key', c.apiKey).set('Authorization', `Bearer ${bearer}`);
  const day = (n: number): string => addDays(today, -n);
  const range = (from: number, to: number, rest = '') =>
    `/visits/standard?SvcClientId=1001&FromDate=${day(from)}&ToDate=${day(to)}&Skip=0&Take=1000${rest}`;
  const ids = (res: request.Response): number[] => (res.body.data.visits as Visit[]).map((v) => v.visitId);

  async function errorsOf(query: string): Promise<string[]> {
    const res = await get(`/visits/standard?${query}`);
    expect(res.status).toBe(400);
    expect(res.headers['content-type']).toBe(PROBLEM);
    const body = JSON.parse(res.text);
    expect(body).toEqual({
      title: 'Bad Request',
      status: 400,
      detail: "The request could not be processed; see 'errors' for each rule it broke.",
      instance: expect.stringMatching(/^urn:svc:api:results:error:[0-9a-f-]{36}$/),
      errors: expect.any(Array),
    });
    return body.errors as string[];
  }

  describe('returns the visits', () => {
    it('as application/json { data: { visits } } in the interface field order and types', async () => {
      const res = await get(range(2, 2));
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
      const page = res.body.data.visits as Visit[];
      expect(page).toHaveLength(3);
      for (const v of page) expect(Object.keys(v)).toEqual(STANDARD_FIELDS);
      const record = visits.find((v) => v.visitId === page[1].visitId)!;
      expect(page[1]).toEqual({
        visitId: record.visitId,
        clientId: 1001,
        clientName: 'Acme Dining',
        brandName: 'Acme Grill',
        branchId: 'B-1',
        branchCode: 'LDS-01',
        branchName: 'Leeds',
        visitType: record.visitType,
        questionnaireType: record.questionnaireType,
        visitScore: record.visitScore,
        recommendScore: record.recommendScore,
        recommendComment: record.recommendComment,
        visitDateTime: record.visitDateTime,
        modificationDate: record.modificationDate,
        visitSource: 'Web',
        sections: record.sections,
      });
    });

    it('gives nullable fields as null, never missing', async () => {
      const page = (await get(range(40, 10))).body.data.visits as Visit[];
      const york = page.find((v) => v.branchId === 'B-2')!;
      expect(york.branchCode).toBeNull();
      expect(york.visitSource).toBeNull();
      const first = page.find((v) => v.recommendScore === null)!;
      expect(first).toHaveProperty('recommendComment', null);
      expect((first.sections as { questions: Record<string, unknown>[] }[])[0].questions[1]).toEqual({
        subject: 'Anything else?',
        score: null,
        analysisTag: null,
        category: null,
        dish: null,
        answer: 'Lovely\nevening',
      });
    });

    it('plus returns every standard field and adds guestId and optIns; standard never has them', async () => {
      const plus = await get(range(31, 1).replace('/standard', '/plus'));
      const standard = await get(range(31, 1));
      expect(plus.status).toBe(200);
      expect(ids(plus)).toEqual(ids(standard));
      const byId = new Map(visits.map((v) => [v.visitId, v]));
      (plus.body.data.visits as Visit[]).forEach((v, i) => {
        expect(Object.keys(v)).toEqual([...STANDARD_FIELDS, 'guestId', 'optIns']);
        const { guestId, optIns, ...rest } = v;
        expect(rest).toEqual(standard.body.data.visits[i]);
        const record = byId.get(v.visitId)!;
        expect(guestId).toBe(record.guestId);
        expect(optIns).toEqual(record.optIns ?? { contactByEmail: null, joinMarketing: null });
      });
      expect(JSON.stringify(standard.body)).not.toMatch(/guestId|optIns/);
      expect((plus.body.data.visits as Visit[]).some((v) => (v.optIns as { joinMarketing: unknown }).joinMarketing === null)).toBe(true);
    });

    it('filters on the local date, both ends inclusive', async () => {
      expect(ids(await get(range(10, 5)))).toEqual(expectedIds(visits, { clientId: 1001, from: day(10), to: day(5) }));
      expect(ids(await get(range(10, 5))).length).toBe(18);
    });

    it('filters by brand and by visit types (codes in any case)', async () => {
      expect(ids(await get(range(20, 1, '&SvcBrandId=6')))).toEqual(
        expectedIds(visits, { clientId: 1001, from: day(20), to: day(1), brandId: 6 }),
      );
      expect(ids(await get(range(20, 1, '&VisitTypes=mv,Ta')))).toEqual(
        expectedIds(visits, { clientId: 1001, from: day(20), to: day(1), types: ['MV', 'TA'] }),
      );
      expect(ids(await get(range(20, 1, '&visittypes=OF&svcbrandid=5')))).toEqual(
        expectedIds(visits, { clientId: 1001, from: day(20), to: day(1), brandId: 5, types: ['OF'] }),
      );
    });

    it("never returns another client's visits", async () => {
      const all = ids(await get(range(31, 1)));
      expect(all).not.toContain(99001);
      expect(all).toEqual(expectedIds(visits, { clientId: 1001, from: day(31), to: day(1) }));
    });

    // Paging in order lets the service seek from the row before a page instead of skipping;
    // jumping around makes it skip. Both must give the same pages, filters and ties included.
    it.each([
      ['all visits', '', 93],
      ['one brand and two visit types', '&SvcBrandId=6&VisitTypes=MV,TA', 21],
    ])('pages with Skip and Take through exactly the set and order of one large request: %s', async (_, filters, count) => {
      const whole = ids(await get(range(31, 1, filters)));
      expect(whole.length).toBe(count);
      const page = async (skip: number, take: number): Promise<number[]> => {
        const res = await get(`/visits/standard?SvcClientId=1001&FromDate=${day(31)}&ToDate=${day(1)}&Skip=${skip}&Take=${take}${filters}`);
        expect(res.status).toBe(200);
        return ids(res);
      };
      for (const take of [1, 7, 31, 93]) {
        const paged: number[] = [];
        for (let skip = 0; ; skip += take) {
          const visits = await page(skip, take);
          paged.push(...visits);
          // The interface's rule: a page shorter than Take is the last.
          if (visits.length < take) break;
        }
        expect(paged).toEqual(whole);
      }
      for (const [skip, take] of [[count - 3, 2], [5, 3], [6, 4], [0, 2], [2, 5]]) {
        expect(await page(skip, take)).toEqual(whole.slice(skip, skip + take));
      }
    });

    it('returns an empty page past the end', async () => {
      const res = await get(`/visits/standard?SvcClientId=1001&FromDate=${day(31)}&ToDate=${day(1)}&Skip=5000&Take=10`);
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ data: { visits: [] } });
    });

    it("never moves a visit of another client to the writer's, even one written after the importer looked (a concurrent import)", async () => {
      const { readVisitRecord } = await import('../src/visits/visit-record.js');
      const { VisitsRepository } = await import('../src/visits/visits.repository.js');
      const { DataSource } = await import('typeorm');
      const theirs = visits.find((v) => v.clientId === 1001)!;
      const other = visits.find((v) => v.clientId === 1002)!;
      // The record as client 1002 would import it, past the importer's own look (which it passed before 1001's commit).
      const { record } = readVisitRecord({ ...theirs, clientId: 1002, branchId: other.branchId, brandId: other.brandId ?? undefined });
      await expect(t.app.get(VisitsRepository).upsertBatch([record!.visit])).rejects.toThrow(
        '1 of the visits being written belong to another client now (written by another import meanwhile): nothing of this batch was written.',
      );
      const rows = await t.app.get(DataSource).query(`SELECT client_id FROM visits WHERE id = ${theirs.visitId}`);
      expect(rows).toEqual([{ client_id: 1001 }]);
      // Two such visits, 201 records apart (in two statements of the batch): both are counted.
      const second = visits.filter((v) => v.clientId === 1001)[1];
      const batch = [theirs, ...Array.from({ length: 200 }, (_, i) => ({ ...theirs, visitId: 9_700_000 + i })), second].map(
        (v) => readVisitRecord({ ...v, clientId: 1002, branchId: other.branchId, brandId: other.brandId ?? undefined }).record!.visit,
      );
      await expect(t.app.get(VisitsRepository).upsertBatch(batch)).rejects.toThrow(
        '2 of the visits being written belong to another client now (written by another import meanwhile): nothing of this batch was written.',
      );
      const [{ n }] = await t.app.get(DataSource).query<{ n: number | string }[]>('SELECT COUNT(*) AS n FROM visits WHERE id >= 9700000 AND id < 9700200');
      expect(Number(n)).toBe(0);
    });

    it('shows a re-imported MV visit with its new score and a later modificationDate', async () => {
      const mv = visits.find((v) => v.visitType === 'MV' && v.visitDateTime.startsWith(day(1)))!;
      const pageOf = async (): Promise<Visit[]> => ((await get(range(1, 1))).body as { data: { visits: Visit[] } }).data.visits;
      const before = (await pageOf()).find((v) => v.visitId === mv.visitId)!;
      await importVisits(t, [{ ...mv, visitScore: 12.5, modificationDate: undefined }]);
      const after = (await pageOf()).find((v) => v.visitId === mv.visitId)!;
      expect(before.visitScore).toBe(mv.visitScore);
      expect(after.visitScore).toBe(12.5);
      expect(after.modificationDate > before.modificationDate).toBe(true);
    });

    it('gives each page an ETag and answers 304 while the data is unchanged', async () => {
      const first = await get(range(5, 3));
      expect(first.headers.etag).toMatch(/^W\/"[\w-]{27}"$/);
      expect(first.headers['cache-control']).toBe('private, no-cache');
      const again = await get(range(5, 3)).set('If-None-Match', first.headers.etag);
      expect(again.status).toBe(304);
      expect(again.text).toBe('');
      // A client holding several versions sends them all; a cache may send `*`.
      const listed = await get(range(5, 3)).set('If-None-Match', `W/"older", ${first.headers.etag}`);
      expect([listed.status, listed.headers.etag]).toEqual([304, first.headers.etag]);
      expect((await get(range(5, 3)).set('If-None-Match', '*')).status).toBe(304);
      expect((await get(range(5, 3)).set('If-None-Match', 'W/"older"')).status).toBe(200);
      // A field that is no list of entity tags names none the client holds: the page itself.
      for (const garbled of [`x${first.headers.etag}`, `${first.headers.etag};q=1`, `w/${first.headers.etag.replace(/^W\//, '')}`]) {
        const page = await get(range(5, 3)).set('If-None-Match', garbled);
        expect([page.status, page.body.data.visits.length]).toEqual([200, first.body.data.visits.length]);
      }
      // As Node's fetch sends it: the validator with Cache-Control: no-cache, on the visit pages' own path too.
      const revalidated = await get(range(5, 3)).set('If-None-Match', first.headers.etag).set('Cache-Control', 'no-cache');
      expect([revalidated.status, revalidated.text]).toEqual([304, '']);
      const otherPage = await get(range(5, 4));
      expect(otherPage.headers.etag).not.toBe(first.headers.etag);
    });

    it('answers an If-Match that names no current page with a 412 problem (a weak ETag never matches it), and `*` with the page', async () => {
      const first = await get(range(5, 3));
      for (const ifMatch of [first.headers.etag, '"other"']) {
        const failed = await get(range(5, 3)).set('If-Match', ifMatch);
        expect(failed.status).toBe(412);
        expect(failed.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(failed.body).toEqual({
          title: 'Precondition Failed',
          status: 412,
          detail: 'If-Match names no current representation: none of its entity tags is this one by strong comparison.',
          instance: expect.stringMatching(/^urn:svc:api:results:error:/),
        });
      }
      const any = await get(range(5, 3)).set('If-Match', '*');
      expect([any.status, any.headers.etag, any.body.data.visits.length]).toEqual([200, first.headers.etag, first.body.data.visits.length]);
    });

    it('serves a changed branch code at once, never a page rendered before the change', async () => {
      const before = await get(range(6, 6));
      expect((before.body.data.visits as Visit[]).map((v) => v.branchCode)).toContain('LDS-01');
      const { writeFileSync, mkdtempSync } = await import('node:fs');
      const { join } = await import('node:path');
      const { tmpdir } = await import('node:os');
      const file = join(mkdtempSync(join(tmpdir(), 'branch-')), 'b.json');
      writeFileSync(file, JSON.stringify([{ id: 'B-1', name: 'Leeds Central', branchCode: 'LDS-99', brandId: 5 }]));
      await importBranches(t, 1001, file);
      const after = await get(range(6, 6)).set('If-None-Match', before.headers.etag);
      expect(after.status).toBe(200);
      const codes = (after.body.data.visits as Visit[]).map((v) => v.branchCode);
      expect(codes).toContain('LDS-99');
      expect(codes).not.toContain('LDS-01');
      expect((after.body.data.visits as Visit[]).find((v) => v.branchId === 'B-1')?.branchName).toBe('Leeds Central');
    });

    it('matches parameter names in any case', async () => {
      const mixed = `/visits/standard?svcClientID=1001&FROMDATE=${day(3)}&todate=${day(2)}&sKiP=0&TAKE=10`;
      expect(ids(await get(mixed))).toEqual(ids(await get(range(3, 2))));
    });
  });

  describe('refuses a query that breaks a rule, with every message at once', () => {
    it('names each missing parameter', async () => {
      expect(await errorsOf('')).toEqual([
        "'SvcClientId' must not be empty.",
        "'FromDate' must not be empty.",
        "'ToDate' must not be empty.",
        "'Skip' must not be empty.",
        "'Take' must not be empty.",
      ]);
    });

    const valid = (over: Record<string, string>): string =>
      new URLSearchParams({ SvcClientId: '1001', FromDate: day(3), ToDate: day(2), Skip: '0', Take: '10', ...over }).toString();

    it.each([
      [{ SvcClientId: 'abc' }, "'SvcClientId' must be an integer: 'abc'."],
      // Spaces and control characters are no part of an integer (a '+' in a query is a space).
      [{ SvcClientId: ' 1001' }, "'SvcClientId' must be an integer: ' 1001'."],
      [{ Skip: '0\n' }, "'Skip' must be an integer: '0\n'."],
      [{ Take: '\t5' }, "'Take' must be an integer: '\t5'."],
      [{ SvcClientId: '0' }, "'SvcClientId' must be greater than '0'."],
      [{ SvcClientId: '-4' }, "'SvcClientId' must be greater than '0'."],
      [{ SvcClientId: '1.5' }, "'SvcClientId' must be an integer: '1.5'."],
      [{ FromDate: '2024-13-45' }, "'FromDate' is not in the expected format yyyy-mm-dd: '2024-13-45'."],
      [{ FromDate: '2024-02-30' }, "'FromDate' is not in the expected format yyyy-mm-dd: '2024-02-30'."],
      [{ FromDate: '01/02/2024' }, "'FromDate' is not in the expected format yyyy-mm-dd: '01/02/2024'."],
      [{ ToDate: '2024-1-05' }, "'ToDate' is not in the expected format yyyy-mm-dd: '2024-1-05'."],
      [{ Skip: '-1' }, "'Skip' must be greater than or equal to '0'."],
      [{ Skip: 'x' }, "'Skip' must be an integer: 'x'."],
      // An integer past every bound is said to be past the bound, however long it is.
      [{ Skip: '1000000000000000' }, "'Skip' must be less than or equal to '999999999999999'."],
      [{ Skip: '9'.repeat(400) }, "'Skip' must be less than or equal to '999999999999999'."],
      [{ Skip: `-${'9'.repeat(30)}` }, "'Skip' must be greater than or equal to '0'."],
      // Leading zeros are not significant digits.
      [{ Take: '00000000000000000000001001' }, "'Take' must be less than or equal to '1000'."],
      [{ Take: '0' }, "'Take' must be greater than '0'."],
      [{ Take: '1001' }, "'Take' must be less than or equal to '1000'."],
      [{ SvcBrandId: '0' }, "'SvcBrandId' must be greater than '0'."],
      // Ids are 32-bit integers: a larger one is a 400 (on PostgreSQL it was a database error).
      [{ SvcBrandId: '3000000000' }, "'SvcBrandId' must be less than or equal to '2147483647'."],
      [{ SvcClientId: '2147483648' }, "'SvcClientId' must be less than or equal to '2147483647'."],
      [{ VisitTypes: 'MV,M1' }, "'VisitTypes' must be 2 alpha characters: 'MV,M1'."],
      [{ VisitTypes: 'MVX' }, "'VisitTypes' must be 2 alpha characters: 'MVX'."],
      [{ VisitTypes: 'MV,' }, "'VisitTypes' must be 2 alpha characters: 'MV,'."],
    ])('%j: %s', async (over, message) => {
      expect(await errorsOf(valid(over))).toEqual([message]);
    });

    it('refuses today and the future as dates, in the service time zone', async () => {
      expect(await errorsOf(valid({ FromDate: today, ToDate: today }))).toEqual([
        "'FromDate' must not be today or in the future.",
        "'ToDate' must not be today or in the future.",
      ]);
      expect(await errorsOf(valid({ ToDate: addDays(today, 3) }))).toEqual(["'ToDate' must not be today or in the future."]);
    });

    it('refuses ToDate before FromDate, and a range over 31 days (31 is allowed)', async () => {
      expect(await errorsOf(valid({ FromDate: day(2), ToDate: day(3) }))).toEqual(["'ToDate' must be greater than or equal to 'FromDate'."]);
      expect(await errorsOf(valid({ FromDate: day(32), ToDate: day(1) }))).toEqual([
        "The range from 'FromDate' to 'ToDate' must not exceed 31 days.",
      ]);
      expect((await get(`/visits/standard?${valid({ FromDate: day(31), ToDate: day(1) })}`)).status).toBe(200);
    });

    it('takes dates of the years 0001 to 0099 as written, and counts the range across the year 0100', async () => {
      const early = await get(`/visits/standard?${valid({ FromDate: '0099-12-16', ToDate: '0100-01-15' })}`);
      expect(early.status).toBe(200);
      expect(early.body).toEqual({ data: { visits: [] } });
      expect(await errorsOf(valid({ FromDate: '0001-01-01', ToDate: '0001-03-01' }))).toEqual([
        "The range from 'FromDate' to 'ToDate' must not exceed 31 days.",
      ]);
      expect(await errorsOf(valid({ FromDate: '0000-12-31', ToDate: '0001-01-01' }))).toEqual([
        "'FromDate' must be a date in the years 0001 to 9999: '0000-12-31'.",
      ]);
    });

    it('refuses a filter written as an array (VisitTypes[]=MV), which would otherwise be ignored and every visit type answered', async () => {
      const base = `SvcClientId=1001&FromDate=${day(3)}&ToDate=${day(1)}&Skip=0&Take=10`;
      expect(await errorsOf(`${base}&VisitTypes[]=MV&VisitTypes[]=OF&SvcBrandId%5B0%5D=5`)).toEqual([
        "'VisitTypes[]' is written as an array, which no parameter is: send 'VisitTypes' once (a list as one comma-separated value).",
        "'SvcBrandId[0]' is written as an array, which no parameter is: send 'SvcBrandId' once (a list as one comma-separated value).",
      ]);
    });

    it('reports several violations together', async () => {
      expect(await errorsOf('svcclientid=x&FromDate=2024-13-45&ToDate=&skip=-2&take=5000&VisitTypes=M')).toEqual([
        "'SvcClientId' must be an integer: 'x'.",
        "'FromDate' is not in the expected format yyyy-mm-dd: '2024-13-45'.",
        "'ToDate' must not be empty.",
        "'Skip' must be greater than or equal to '0'.",
        "'Take' must be less than or equal to '1000'.",
        "'VisitTypes' must be 2 alpha characters: 'M'.",
      ]);
    });

    it('refuses a parameter given twice, in any case', async () => {
      expect(await errorsOf(`${valid({})}&svcclientid=1001`)).toEqual(["'SvcClientId' must be given only once."]);
      expect(await errorsOf(`${valid({})}&TAKE=5`)).toEqual(["'Take' must be given only once."]);
    });

    it('counts an empty value as absent, beside a value given too', async () => {
      for (const extra of ['&svcbrandid=5&SvcBrandId=', '&SvcBrandId=&svcbrandid=5', '&SvcBrandId=&SVCBRANDID=&SvcBrandId=5']) {
        const res = await get(`/visits/standard?${valid({})}${extra}`);
        expect({ extra, status: res.status }).toEqual({ extra, status: 200 });
        expect(new Set((JSON.parse(res.text) as { data: { visits: { brandName: string }[] } }).data.visits.map((v) => v.brandName))).toEqual(new Set(['Acme Grill']));
      }
      expect(await errorsOf(`${valid({})}&SvcBrandId=&svcbrandid=5&SVCBRANDID=6`)).toEqual(["'SvcBrandId' must be given only once."]);
    });

    it('refuses a SvcBrandId of none of the credential\'s clients, or of no client at all, and a visit type that does not exist', async () => {
      for (const brand of [21, 999]) {
        const res = await get(`/visits/standard?${valid({})}&SvcBrandId=${brand}`);
        expect({ brand, status: res.status, detail: (JSON.parse(res.text) as { detail: string }).detail }).toEqual({
          brand,
          status: 403,
          detail: `The credential is not entitled to SvcBrandId ${brand}.`,
        });
      }
      const unknownType = await get(`/visits/standard?${valid({})}&VisitTypes=MV,XX`);
      expect(unknownType.status).toBe(403);
      expect((JSON.parse(unknownType.text) as { detail: string }).detail).toBe('The credential is not entitled to the visit type(s) XX.');
    });

    it('gives an empty page for a SvcBrandId of another of the credential\'s clients', async () => {
      const both = await issueCredential(t, { clients: [1001, 1002] });
      const res = await get(`/visits/standard?${valid({})}&SvcBrandId=21`, both, await tokenFor(t.http, both));
      expect(res.status).toBe(200);
      expect(JSON.parse(res.text)).toEqual({ data: { visits: [] } });
    });

    it('ignores unknown parameters', async () => {
      expect((await get(`/visits/standard?${valid({})}&utm_source=mail`)).status).toBe(200);
    });
  });

  describe('enforces entitlements', () => {
    let limited: IssuedCredential;
    let limitedToken: string;
    beforeAll(async () => {
      limited = await issueCredential(t, { clients: [1001], brands: [5], visitTypes: ['MV', 'OF'], scopes: ['visits/standard.read'] });
      limitedToken = await tokenFor(t.http, limited);
    });
    const forbidden = async (path: string, detail: string, c = limited, bearer = limitedToken) => {
      const res = await get(path, c, bearer);
      expect(res.status).toBe(403);
      expect(res.headers['content-type']).toBe(PROBLEM);
      expect(JSON.parse(res.text)).toMatchObject({ title: 'Forbidden', status: 403, detail });
    };
    const brandNames: Record<number, string> = { 5: 'Acme Grill', 6: 'Acme Pizzeria' };
    /** Every visit of the page is of one of the brands and types, and the page is exactly the expected one. */
    const expectOnly = (res: request.Response, expected: number[], brands: number[], types: string[]) => {
      expect(res.status).toBe(200);
      expect(expected.length).toBeGreaterThan(0);
      expect(ids(res)).toEqual(expected);
      for (const v of res.body.data.visits as Visit[]) {
        expect(brands.map((b) => brandNames[b])).toContain(v.brandName);
        expect(types).toContain(v.visitType);
      }
    };

    it('refuses a client, brand or visit type outside the credential with 403', async () => {
      await forbidden(range(3, 2).replace('SvcClientId=1001', 'SvcClientId=1002'), 'The credential is not entitled to SvcClientId 1002.');
      await forbidden(range(3, 2, '&SvcBrandId=6'), 'The credential is not entitled to SvcBrandId 6.');
      await forbidden(range(3, 2, '&VisitTypes=MV,ta'), 'The credential is not entitled to the visit type(s) TA.');
    });

    it('without SvcBrandId or VisitTypes, returns only the entitled brands and visit types', async () => {
      const entitled = expectedIds(visits, { clientId: 1001, from: day(31), to: day(1), brandIds: [5], types: ['MV', 'OF'] });
      expect(entitled.length).toBeLessThan(expectedIds(visits, { clientId: 1001, from: day(31), to: day(1) }).length);
      expectOnly(await get(range(31, 1), limited, limitedToken), entitled, [5], ['MV', 'OF']);
      // An empty VisitTypes means "every type", which for this credential is its own types.
      expectOnly(await get(range(31, 1, '&VisitTypes='), limited, limitedToken), entitled, [5], ['MV', 'OF']);
    });

    it('with an entitled filter, returns that subset', async () => {
      const res = await get(range(10, 1, '&SvcBrandId=5&VisitTypes=OF'), limited, limitedToken);
      expectOnly(res, expectedIds(visits, { clientId: 1001, from: day(10), to: day(1), brandId: 5, types: ['OF'] }), [5], ['OF']);
      expectOnly(
        await get(range(31, 1, '&VisitTypes=mv'), limited, limitedToken),
        expectedIds(visits, { clientId: 1001, from: day(31), to: day(1), brandIds: [5], types: ['MV'] }),
        [5],
        ['MV'],
      );
      expectOnly(
        await get(range(31, 1, '&svcbrandid=5'), limited, limitedToken),
        expectedIds(visits, { clientId: 1001, from: day(31), to: day(1), brandId: 5, types: ['MV', 'OF'] }),
        [5],
        ['MV', 'OF'],
      );
    });

    it('applies the same rule to /visits/plus', async () => {
      const pizzeria = await issueCredential(t, { brands: [6], visitTypes: ['TA', 'MV'], scopes: ['visits/standard.read', 'visits/plus.read'] });
      const pizzeriaToken = await tokenFor(t.http, pizzeria);
      const plus = (rest: string) => get(range(31, 1, rest).replace('/standard', '/plus'), pizzeria, pizzeriaToken);
      const expected = expectedIds(visits, { clientId: 1001, from: day(31), to: day(1), brandIds: [6], types: ['TA', 'MV'] });
      expectOnly(await plus(''), expected, [6], ['TA', 'MV']);
      expectOnly(await plus('&VisitTypes=TA'), expectedIds(visits, { clientId: 1001, from: day(31), to: day(1), brandIds: [6], types: ['TA'] }), [6], ['TA']);
      await forbidden(range(31, 1, '&SvcBrandId=5').replace('/standard', '/plus'), 'The credential is not entitled to SvcBrandId 5.', pizzeria, pizzeriaToken);
      await forbidden(range(31, 1, '&VisitTypes=OF').replace('/standard', '/plus'), 'The credential is not entitled to the visit type(s) OF.', pizzeria, pizzeriaToken);
    });

    it('never serves one credential a page rendered for another entitlement of the same client', async () => {
      const grill = await issueCredential(t, { brands: [5], scopes: ['visits/standard.read', 'visits/plus.read'] });
      const pizzeria = await issueCredential(t, { brands: [6], scopes: ['visits/standard.read', 'visits/plus.read'] });
      const [grillToken, pizzeriaToken] = [await tokenFor(t.http, grill), await tokenFor(t.http, pizzeria)];
      const all = ['MV', 'OF', 'TA'];
      for (const variant of ['/standard', '/plus']) {
        for (const [skip, take] of [[0, 1000], [0, 7], [14, 7]]) {
          const url = range(31, 1).replace('/standard', variant).replace('Skip=0&Take=1000', `Skip=${skip}&Take=${take}`);
          const expected = (brandIds?: number[]) =>
            expectedIds(visits, { clientId: 1001, from: day(31), to: day(1), brandIds }).slice(skip, skip + take);
          // The unrestricted credential asks first, so its page is in the cache when the others ask.
          const whole = await get(url);
          expect(ids(whole)).toEqual(expected());
          const first = await get(url, grill, grillToken);
          expectOnly(first, expected([5]), [5], all);
          const second = await get(url, pizzeria, pizzeriaToken);
          expectOnly(second, expected([6]), [6], all);
          expectOnly(await get(url, grill, grillToken), expected([5]), [5], all);
          expect(new Set([whole.headers.etag, first.headers.etag, second.headers.etag]).size).toBe(3);
          // Another entitlement's validator is not this page's: the page itself is sent.
          expectOnly(await get(url, pizzeria, pizzeriaToken).set('If-None-Match', first.headers.etag), expected([6]), [6], all);
          expect((await get(url, pizzeria, pizzeriaToken).set('If-None-Match', second.headers.etag)).status).toBe(304);
        }
      }
    });

    it('reads nothing for a credential whose stored entitlement is an empty list of brands or visit types', async () => {
      const { DataSource } = await import('typeorm');
      const { Credential } = await import('../src/auth/entities/credential.entity.js');
      const credentials = t.app.get(DataSource).getRepository(Credential);
      const none = await issueCredential(t);
      const noneToken = await tokenFor(t.http, none);
      expect(ids(await get(range(31, 1), none, noneToken)).length).toBeGreaterThan(0);
      const cases: [{ brandIds: string | null; visitTypes?: string }, string][] = [
        [{ brandIds: '' }, 'The credential is not entitled to SvcBrandId 5.'],
        [{ brandIds: null, visitTypes: ' ' }, 'The credential is not entitled to the visit type(s) MV.'],
      ];
      for (const [change, refusal] of cases) {
        await credentials.update({ clientId: none.clientId }, change);
        for (const path of [range(31, 1), range(31, 1).replace('/standard', '/plus')]) {
          const res = await get(path, none, noneToken);
          expect(res.status).toBe(200);
          expect(res.body).toEqual({ data: { visits: [] } });
        }
        await forbidden(range(31, 1, '&SvcBrandId=5&VisitTypes=MV'), refusal, none, noneToken);
      }
      const branches = await get('/branches?SvcClientId=1001', none, noneToken);
      expect(branches.status).toBe(200);
      await credentials.update({ clientId: none.clientId }, { brandIds: '', visitTypes: null });
      const noBrands = await get('/branches?SvcClientId=1001', none, noneToken);
      expect(noBrands.status).toBe(200);
      expect(noBrands.body).toEqual([]);
      expect(branches.body).not.toEqual([]);
    });

    it('refuses plus without its scope', async () => {
      const res = await get(range(3, 2).replace('/standard', '/plus'), limited, limitedToken);
      expect(res.status).toBe(403);
      expect(res.headers['www-authenticate']).toContain('scope="visits/plus.read"');
    });
  });
});

describe(`GET /branches (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  beforeAll(async () => {
    t = await startTestApp();
    await seedVisits(t);
    partner = await issueCredential(t);
    const { writeFileSync, mkdtempSync } = await import('node:fs');
    const { join } = await import('node:path');
    const { tmpdir } = await import('node:os');
    const file = join(mkdtempSync(join(tmpdir(), 'branch-')), 'b.json');
    writeFileSync(file, JSON.stringify([{ id: 'B-3', name: 'Pop-up', branchCode: 'POP' }]));
    await importBranches(t, 1001, file);
  });
  afterAll(async () => {
    await t.close();
  });
  const list = async (c: IssuedCredential, query = 'SvcClientId=1001'): Promise<request.Response> =>
    request(t.http).get(`/branches?${query}`).set('svc-api-key', c.apiKey).set('Authorization', `Bearer ${await tokenFor(t.http, c)}`);

  it("returns the client's branches as a JSON array of { id, name, branchCode }", async () => {
    const res = await list(partner, 'svcclientid=1001');
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.body).toEqual([
      { id: 'B-1', name: 'Leeds', branchCode: 'LDS-01' },
      { id: 'B-2', name: 'York', branchCode: null },
      { id: 'B-3', name: 'Pop-up', branchCode: 'POP' },
    ]);
  });

  it('returns a credential restricted to brands only the branches of those brands', async () => {
    const grill = await issueCredential(t, { brands: [5], scopes: ['branches/standard.read'] });
    const both = await issueCredential(t, { brands: [6, 5], visitTypes: ['OF'], scopes: ['branches/standard.read'] });
    expect((await list(grill)).body).toEqual([{ id: 'B-1', name: 'Leeds', branchCode: 'LDS-01' }]);
    // A branch without a brand belongs to none of a restricted credential's brands.
    expect((await list(both)).body).toEqual([
      { id: 'B-1', name: 'Leeds', branchCode: 'LDS-01' },
      { id: 'B-2', name: 'York', branchCode: null },
    ]);
    // Parameters /branches does not take are ignored, they widen nothing.
    expect((await list(grill, 'SvcClientId=1001&SvcBrandId=6')).body).toEqual([{ id: 'B-1', name: 'Leeds', branchCode: 'LDS-01' }]);
    const foreign = await list(grill, 'SvcClientId=1002');
    expect(foreign.status).toBe(403);
  });

  it('refuses a missing or malformed SvcClientId with 400', async () => {
    const res = await list(partner, 'SvcClientId=abc');
    expect(res.status).toBe(400);
    expect(JSON.parse(res.text).errors).toEqual(["'SvcClientId' must be an integer: 'abc'."]);
  });
});
