import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import request from 'supertest';
import type { IssuedCredential } from '../src/auth/credentials.service.js';
import { ClientsService } from '../src/clients/clients.service.js';
import { issueCredential, seedClients, tokenFor } from './helpers/auth.js';
import { cli } from './helpers/cli.js';
import { startTestApp, type TestApp } from './helpers/test-app.js';

const files = mkdtempSync(join(tmpdir(), 'round-trip-'));
function file(name: string, text: string): string {
  const path = join(files, name);
  writeFileSync(path, text);
  return path;
}

const DAY = '2024-03-10';

/** `count` characters (code points) of `unit` repeated, cut at a character boundary. */
function characters(unit: string, count: number): string {
  const chars = [...unit];
  return Array.from({ length: count }, (_, i) => chars[i % chars.length]).join('');
}

type Fields = { [field: string]: unknown };

function visit(visitId: number, fields: Fields): Fields {
  return {
    visitId,
    clientId: 1001,
    brandId: 5,
    branchId: 'B-1',
    visitType: 'MV',
    questionnaireType: 'Mystery Visit - Dinner',
    visitScore: 80,
    recommendScore: 9,
    recommendComment: 'Fine.',
    visitDateTime: `${DAY}T12:00:${String(visitId).padStart(2, '0')}`,
    modificationDate: `${DAY}T23:00:00`,
    visitSource: 'Web',
    sections: [],
    guestId: null,
    optIns: null,
    completedAt: `${DAY}T22:00:00Z`,
    ...fields,
  };
}

const UNICODE = {
  astral: '😀 𝄞 𠜎 👨‍👩‍👧',
  combining: 'e\u0301 A\u030A n\u0303 (not é Å ñ)',
  rtl: 'مرحبا بالعالم \u200F שלום עולם',
  escapes: '"quoted" \\back\\slash\nnew line\ttab \u2028 \u2029 </script> \u0001 \u001f \u007f',
};

/** Every field of both variants, each with the values an import must keep exactly. */
const RECORDS: Fields[] = [
  // Empty strings stay empty strings; zero scores stay zero; false stays false.
  visit(1, {
    branchId: 'B-E',
    visitType: 'OF',
    visitScore: 0,
    recommendScore: 0,
    recommendComment: '',
    visitSource: '',
    sections: [
      { name: 'Food', score: 0, questions: [{ subject: 'Any dish?', score: 0, analysisTag: '', category: '', dish: '', answer: '' }] },
      { name: 'No questions', score: 0, questions: [] },
    ],
    guestId: '',
    optIns: { contactByEmail: false, joinMarketing: false },
  }),
  // Null stays null, and a visit without a brand of a branch without one has no brand name.
  visit(2, {
    brandId: null,
    branchId: 'B-0',
    visitType: 'OF',
    recommendScore: null,
    recommendComment: null,
    visitSource: null,
    sections: [{ name: 'Free text', score: null, questions: [{ subject: 'Anything else?', score: null, analysisTag: null, category: null, dish: null, answer: null }] }],
    guestId: null,
    optIns: { contactByEmail: null, joinMarketing: true },
  }),
  // Unicode of every kind, unnormalised.
  visit(3, {
    visitType: 'OF',
    questionnaireType: `Dîner – 夕食 ${UNICODE.astral}`,
    recommendComment: Object.values(UNICODE).join(' | '),
    visitSource: UNICODE.rtl,
    sections: [
      {
        name: `Qualité ${UNICODE.combining}`,
        score: 50,
        questions: [
          {
            subject: UNICODE.combining,
            score: 5,
            analysisTag: '\u200F',
            category: UNICODE.rtl,
            dish: `Crème brûlée ${UNICODE.astral}`,
            answer: UNICODE.escapes,
          },
        ],
      },
    ],
    guestId: `G-${UNICODE.astral}`,
    optIns: { contactByEmail: true, joinMarketing: null },
  }),
  // The longest texts: 10,000 characters, astral ones counting as one.
  visit(4, {
    recommendComment: characters(`ab😀é\u0301${UNICODE.rtl}`, 10_000),
    sections: [
      {
        name: characters('S😀', 200),
        score: 1,
        questions: [{ subject: characters('Q𝄞', 1000), score: 1, analysisTag: 'T', category: 'C', dish: characters('d', 200), answer: characters('x👨‍👩‍👧', 10_000) }],
      },
    ],
  }),
  // Numbers with decimals keep their value.
  visit(5, {
    visitScore: 86.45,
    recommendScore: 7.5,
    sections: [
      {
        name: 'Scores',
        score: 92.125,
        questions: [0.30000000000000004, -3.5, 1e-7, 12345.678901234567, 1e21, 2.2250738585072014e-308].map((score, i) => ({
          subject: `Q${i}`,
          score,
          analysisTag: null,
          category: null,
          dish: null,
          answer: null,
        })),
      },
    ],
  }),
  visit(6, { visitScore: 99.99999999999999, recommendScore: 9.999999999999998 }),
  visit(7, { visitScore: 33.333333333333336, recommendScore: 0.1 }),
];

const BRANCHES = [
  { id: 'B-1', name: 'Leeds', branchCode: 'LDS-01', brandId: 5 },
  { id: 'B-E', name: 'Empty code', branchCode: '', brandId: 5 },
  { id: 'B-0', name: 'No brand', branchCode: null },
];

/** What the interface promises for a record: its own fields, names and codes from their tables. */
function expected(record: Fields, plus: boolean): Fields {
  const branch = BRANCHES.find((b) => b.id === record.branchId)!;
  const brandId = record.brandId ?? branch.brandId ?? null;
  const standard = {
    visitId: record.visitId,
    clientId: 1001,
    clientName: 'Acme Dining',
    brandName: brandId === 5 ? 'Acme Grill' : null,
    branchId: branch.id,
    branchCode: branch.branchCode,
    branchName: branch.name,
    visitType: record.visitType,
    questionnaireType: record.questionnaireType,
    visitScore: record.visitScore,
    recommendScore: record.recommendScore,
    recommendComment: record.recommendComment,
    visitDateTime: record.visitDateTime,
    modificationDate: record.modificationDate,
    visitSource: record.visitSource,
    sections: record.sections,
  };
  return plus ? { ...standard, guestId: record.guestId, optIns: record.optIns ?? { contactByEmail: null, joinMarketing: null } } : standard;
}

describe(`visit values from import to response (${process.env.TEST_DATABASE})`, () => {
  let t: TestApp;
  let partner: IssuedCredential;
  let token: string;

  beforeAll(async () => {
    t = await startTestApp();
    await seedClients(t);
    await t.app.get(ClientsService).addBrand(1001, 6, 'Acme Pizzeria');
    partner = await issueCredential(t);
    token = await tokenFor(t.http, partner);
  });
  afterAll(async () => {
    await t.close();
  });

  const get = (path: string) => request(t.http).get(path).set('svc-api-key', partner.apiKey).set('Authorization', `Bearer ${token}`);
  const importWithCli = async (args: string[]) => {
    const result = await cli(['--json', ...args], t.env);
    return { code: result.code, report: JSON.parse(result.stdout) as { imported: number; rejected: { line: number; errors: string[] }[] } };
  };

  it('imports the records with the operator CLI, refusing none', async () => {
    const branches = await importWithCli(['branches', 'import', '--client', '1001', file('branches.json', JSON.stringify(BRANCHES))]);
    expect(branches).toEqual({ code: 0, report: expect.objectContaining({ imported: 3, rejected: [] }) });
    const visits = await importWithCli(['visits', 'import', file('visits.ndjson', RECORDS.map((r) => JSON.stringify(r)).join('\n'))]);
    expect(visits).toEqual({ code: 0, report: expect.objectContaining({ imported: RECORDS.length, rejected: [] }) });
  });

  it.each([
    ['standard', false],
    ['plus', true],
  ])('serves every field of %s exactly as imported', async (variant, plus) => {
    const res = await get(`/visits/${variant}?SvcClientId=1001&FromDate=${DAY}&ToDate=${DAY}&Skip=0&Take=100`);
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    const served = (JSON.parse(res.text) as { data: { visits: Fields[] } }).data.visits;
    expect(served.map((v) => v.visitId)).toEqual(RECORDS.map((r) => r.visitId));
    served.forEach((v, i) => {
      const want = expected(RECORDS[i], plus);
      expect(v).toEqual(want);
      // Same fields in the same order, none missing and none added (toEqual alone ignores order).
      expect(Object.keys(v)).toEqual(Object.keys(want));
    });
    // Empty strings are not nulls: every empty text of record 1 is served as "".
    const empty = served[0] as { recommendComment: unknown; visitSource: unknown; branchCode: unknown; sections: { questions: Fields[] }[] };
    expect([empty.recommendComment, empty.visitSource, empty.branchCode]).toEqual(['', '', '']);
    expect(empty.sections[0].questions[0]).toEqual({ subject: 'Any dish?', score: 0, analysisTag: '', category: '', dish: '', answer: '' });
    if (plus) expect((served[0] as { guestId: unknown }).guestId).toBe('');
  });

  it.each(['standard', 'plus'])('serves the same bytes of %s whether a page is small or large', async (variant) => {
    // A page's buffer is sized from the pages before it: a large page after a small one, and the other way round, gives the same bytes.
    // Uncompressed, so that Content-Length counts the page's own bytes.
    const page = (take: number) => get(`/visits/${variant}?SvcClientId=1001&FromDate=${DAY}&ToDate=${DAY}&Skip=0&Take=${take}`).set('Accept-Encoding', 'identity');
    const [small, large] = [await page(100), await page(1000)];
    expect([small.status, large.status]).toEqual([200, 200]);
    expect(large.headers['content-type']).toBe(small.headers['content-type']);
    // The same bytes: as many (Content-Length counts bytes), and the same text once decoded.
    expect(Number(large.headers['content-length'])).toBe(Buffer.byteLength(small.text, 'utf8'));
    expect(Number(small.headers['content-length'])).toBe(Buffer.byteLength(small.text, 'utf8'));
    expect(large.text).toBe(small.text);
    expect(JSON.parse(small.text)).toHaveProperty('data.visits.length', RECORDS.length);
  });

  it('lists a branch code imported as "" as "", and one imported as null as null', async () => {
    const res = await get('/branches?SvcClientId=1001');
    expect(res.status).toBe(200);
    expect(res.body).toEqual([
      { id: 'B-0', name: 'No brand', branchCode: null },
      { id: 'B-1', name: 'Leeds', branchCode: 'LDS-01' },
      { id: 'B-E', name: 'Empty code', branchCode: '' },
    ]);
  });

  it('refuses, naming the field, what cannot be kept exactly or breaks a rule of a required field', async () => {
    const bad: [Fields, string[]][] = [
      [visit(20, { recommendComment: characters('é😀', 10_001) }), ["'recommendComment' must be at most 10000 characters."]],
      [visit(21, { recommendComment: 'a\u0000b' }), ["'recommendComment' must not contain NUL characters or unpaired UTF-16 surrogates."]],
      [
        visit(22, { sections: [{ name: 'S', score: 1, questions: [{ subject: 'Q', score: 1, dish: 'half \ud83d of a pair' }] }] }),
        ["'sections[0].questions[0].dish' must not contain NUL characters or unpaired UTF-16 surrogates."],
      ],
      [visit(23, { questionnaireType: '', branchId: '' }), ["'branchId' must not be empty.", "'questionnaireType' must not be empty."]],
      [visit(24, { recommendScore: '', brandId: '' }), ["'brandId' must be an integer: ''.", "'recommendScore' must be a number: ''."]],
      [visit(25, { visitScore: '0x10', optIns: { contactByEmail: '', joinMarketing: 'yes' } }), [
        "'visitScore' must be a number: '0x10'.",
        "'optIns.contactByEmail' must be true, false or null.",
        "'optIns.joinMarketing' must be true, false or null.",
      ]],
      [visit(26, { modificationDate: '' }), ["'modificationDate' is not in the expected format yyyy-mm-ddThh:mm:ss: ''."]],
    ];
    const { code, report } = await importWithCli(['visits', 'import', file('bad.ndjson', bad.map(([r]) => JSON.stringify(r)).join('\n'))]);
    expect(code).toBe(1);
    expect(report.imported).toBe(0);
    expect(report.rejected).toEqual(bad.map(([, errors], i) => ({ line: i + 1, errors })));
    const res = await get(`/visits/standard?SvcClientId=1001&FromDate=${DAY}&ToDate=${DAY}&Skip=0&Take=100`);
    expect((res.body.data.visits as Fields[]).map((v) => v.visitId)).toEqual(RECORDS.map((r) => r.visitId));
  });
});
