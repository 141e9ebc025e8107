import fc from 'fast-check';
import { visitsPageJson } from './visit-json.js';
import type { VisitRow } from './visits.repository.js';

const nullable = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(arb, { nil: null });
const anyText = fc.string({ unit: 'binary', maxLength: 30 });

/** A row as either driver returns it: ids as numbers or strings, flags as booleans or 0/1. */
const row: fc.Arbitrary<VisitRow> = fc.record({
  id: fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 1 }).map(String)),
  client_id: fc.integer({ min: 1, max: 99999 }),
  client_name: anyText,
  brand_name: nullable(anyText),
  branch_id: anyText,
  branch_code: nullable(anyText),
  branch_name: anyText,
  visit_type: fc.constantFrom('MV', 'OV', 'CL'),
  questionnaire_type: anyText,
  visit_score: fc.double({ min: 0, max: 100, noNaN: true }),
  recommend_score: nullable(fc.integer({ min: 0, max: 10 })),
  recommend_comment: nullable(fc.string({ unit: 'binary', maxLength: 600 })),
  visit_date_time: fc.constant('2026-10-01T12:30:00'),
  modification_date: fc.constant('2026-10-02T08:00:00'),
  visit_source: nullable(anyText),
  sections: fc.jsonValue().map((v) => JSON.stringify([v])),
  guest_id: nullable(anyText),
  opt_email: nullable(fc.oneof(fc.boolean(), fc.constantFrom(0, 1))),
  opt_marketing: nullable(fc.oneof(fc.boolean(), fc.constantFrom(0, 1))),
});

/** What the page must equal: the interface's objects, in its field order. */
function expected(rows: VisitRow[], plus: boolean): unknown {
  const flag = (v: boolean | number | null | undefined): boolean | null => (v === null || v === undefined ? null : v === true || v === 1);
  return {
    data: {
      visits: rows.map((r) => ({
        visitId: Number(r.id),
        clientId: r.client_id,
        clientName: r.client_name,
        brandName: r.brand_name,
        branchId: r.branch_id,
        branchCode: r.branch_code,
        branchName: r.branch_name,
        visitType: r.visit_type,
        questionnaireType: r.questionnaire_type,
        visitScore: r.visit_score,
        recommendScore: r.recommend_score,
        recommendComment: r.recommend_comment,
        visitDateTime: r.visit_date_time,
        modificationDate: r.modification_date,
        visitSource: r.visit_source,
        sections: JSON.parse(r.sections) as unknown,
        ...(plus ? { guestId: r.guest_id, optIns: { contactByEmail: flag(r.opt_email), joinMarketing: flag(r.opt_marketing) } } : {}),
      })),
    },
  };
}

describe('visitsPageJson', () => {
  it('writes the page as the JSON of the interface objects, field order included, for standard and plus', () => {
    fc.assert(
      fc.property(fc.array(row, { maxLength: 20 }), fc.boolean(), (rows, plus) => {
        const body = visitsPageJson(rows, plus).toString('utf8');
        expect(body).toBe(JSON.stringify(expected(rows, plus)));
      }),
      { numRuns: 300 },
    );
  });

  it('copies the stored sections text byte for byte', () => {
    const sections = '[{"sectionName":"Caf\u00e9 \u{1F37D}","score":9.5, "questions":[]}]';
    const base = fc.sample(row, { numRuns: 1, seed: 7 })[0];
    const body = visitsPageJson([{ ...base, sections }], false).toString('utf8');
    expect(body).toContain(`"sections":${sections}}`);
  });

  it('writes an empty page', () => {
    expect(visitsPageJson([], true).toString()).toBe('{"data":{"visits":[]}}');
  });
});
