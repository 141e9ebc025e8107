import fc from 'fast-check';
import { NameFragments, PageWriter, renderVisitDocument, StaleNames, type ClientNames, type DocumentRow, type FeedEnd, type VisitFields } from './visit-json.js';
import { propertyRuns } from '../../test/helpers/property-runs.js';

const nullable = <T>(arb: fc.Arbitrary<T>): fc.Arbitrary<T | null> => fc.option(arb, { nil: null });
const anyText = fc.string({ unit: 'binary', maxLength: 30 });

/** A visit's own fields as either driver returns them: flags as booleans or 0/1. */
const fields: fc.Arbitrary<VisitFields> = fc.record({
  visitType: fc.constantFrom('MV', 'OV', 'CL'),
  questionnaireType: anyText,
  visitScore: fc.double({ min: 0, max: 100, noNaN: true }),
  recommendScore: nullable(fc.integer({ min: 0, max: 10 })),
  recommendComment: nullable(fc.string({ unit: 'binary', maxLength: 600 })),
  visitDateTime: fc.constant('2026-10-01T12:30:00'),
  modificationDate: fc.constant('2026-10-02T08:00:00'),
  visitSource: nullable(anyText),
  sections: fc.jsonValue().map((v) => JSON.stringify([v])),
  guestId: nullable(anyText),
  optInContactByEmail: nullable(fc.oneof(fc.boolean(), fc.constantFrom(0, 1))),
  optInJoinMarketing: nullable(fc.oneof(fc.boolean(), fc.constantFrom(0, 1))),
});

interface Visit {
  id: number | string;
  brandId: number | null;
  branchId: string;
  fields: VisitFields;
}

/** A client's names and a page of its visits, each of one of its brands (or none) and branches. */
const page = fc
  .record({
    clientId: fc.integer({ min: 1, max: 99999 }),
    clientName: anyText,
    brands: fc.uniqueArray(fc.record({ id: fc.integer({ min: 1, max: 999 }), name: anyText }), { minLength: 1, maxLength: 3, selector: (b) => b.id }),
    branches: fc.uniqueArray(fc.record({ id: anyText, code: nullable(anyText), name: anyText }), { minLength: 1, maxLength: 4, selector: (b) => b.id }),
  })
  .chain((names) =>
    fc.record({
      names: fc.constant(names),
      visits: fc.array(
        fc.record({
          id: fc.oneof(fc.integer({ min: 1, max: 2 ** 40 }), fc.integer({ min: 1 }).map(String)),
          brandId: nullable(fc.constantFrom(...names.brands.map((b) => b.id))),
          branchId: fc.constantFrom(...names.branches.map((b) => b.id)),
          fields,
        }),
        { maxLength: 20 },
      ),
    }),
  );

type Page = { names: { clientId: number; clientName: string; brands: { id: number; name: string }[]; branches: { id: string; code: string | null; name: string }[] }; visits: Visit[] };

function clientNames(p: Page): ClientNames {
  return {
    clientId: p.names.clientId,
    clientName: p.names.clientName,
    brands: new Map(p.names.brands.map((b) => [b.id, b.name])),
    branches: new Map(p.names.branches.map((b) => [b.id, { code: b.code, name: b.name }])),
  };
}

/** The row a database gives for the visit: its stored document as text. */
function documentRow(v: Visit): DocumentRow {
  const stored = renderVisitDocument(v.fields);
  return { id: v.id, brand_id: v.brandId, branch_id: v.branchId, standard: stored.standard.toString('utf8'), plus: stored.plus.toString('utf8') };
}

/** What the page must equal: the interface's objects, in its field order. */
function expected(p: Page, plus: boolean): unknown {
  const flag = (v: boolean | number | null | undefined): boolean | null => (v === null || v === undefined ? null : v === true || v === 1);
  return {
    data: {
      visits: p.visits.map(({ id, brandId, branchId, fields: f }) => {
        const branch = p.names.branches.find((b) => b.id === branchId)!;
        return {
          visitId: Number(id),
          clientId: p.names.clientId,
          clientName: p.names.clientName,
          brandName: p.names.brands.find((b) => b.id === brandId)?.name ?? null,
          branchId,
          branchCode: branch.code,
          branchName: branch.name,
          visitType: f.visitType,
          questionnaireType: f.questionnaireType,
          visitScore: f.visitScore,
          recommendScore: f.recommendScore,
          recommendComment: f.recommendComment,
          visitDateTime: f.visitDateTime,
          modificationDate: f.modificationDate,
          visitSource: f.visitSource,
          sections: JSON.parse(f.sections) as unknown,
          ...(plus ? { guestId: f.guestId, optIns: { contactByEmail: flag(f.optInContactByEmail), joinMarketing: flag(f.optInJoinMarketing) } } : {}),
        };
      }),
    },
  };
}

/** The page body of `rows`, written from a buffer guessed too small, so that it grows. */
function visitsPageJson(rows: DocumentRow[], names: NameFragments, plus: boolean, feed?: FeedEnd): Buffer {
  const page = new PageWriter(names, plus, 0);
  for (const row of rows) page.add(row);
  expect(page.count).toBe(rows.length);
  return page.finish(feed);
}

describe('PageWriter', () => {
  it('writes the page as the JSON of the interface objects, field order included, for standard and plus', () => {
    fc.assert(
      fc.property(page, fc.boolean(), (p, plus) => {
        const body = visitsPageJson(p.visits.map(documentRow), new NameFragments(clientNames(p)), plus).toString('utf8');
        expect(body).toBe(JSON.stringify(expected(p, plus)));
      }),
      propertyRuns(300),
    );
  });

  it('copies the stored bytes of every document, read back as text, into the page as they are', () => {
    fc.assert(
      fc.property(page, fc.boolean(), (p, plus) => {
        const body = visitsPageJson(p.visits.map(documentRow), new NameFragments(clientNames(p)), plus);
        let from = 1;
        for (const visit of p.visits) {
          const stored = renderVisitDocument(visit.fields);
          const at = body.indexOf(plus ? Buffer.concat([stored.standard, stored.plus]) : stored.standard, from);
          // In page order: after the document before it.
          expect(at).toBeGreaterThanOrEqual(from);
          from = at + 1;
        }
      }),
      propertyRuns(300),
    );
  });

  it('copies the stored sections text byte for byte', () => {
    const sections = '[{"sectionName":"Caf\u00e9 \u{1F37D}","score":9.5, "questions":[]}]';
    const p = fc.sample(page, { numRuns: 1, seed: 7 })[0];
    const visit = { id: 1, brandId: null, branchId: p.names.branches[0].id, fields: { ...fc.sample(fields, { numRuns: 1, seed: 7 })[0], sections } };
    const body = visitsPageJson([documentRow(visit)], new NameFragments(clientNames(p)), false).toString('utf8');
    expect(body).toContain(`"sections":${sections}}`);
  });

  it('writes an empty page, and a feed page with its token', () => {
    const names = new NameFragments({ clientId: 1, clientName: 'A', brands: new Map(), branches: new Map() });
    expect(visitsPageJson([], names, true).toString()).toBe('{"data":{"visits":[]}}');
    expect(visitsPageJson([], names, false, { removed: [], after: 'tok"en' }).toString()).toBe('{"data":{"visits":[],"removed":[]},"paging":{"after":"tok\\"en"}}');
    expect(visitsPageJson([], names, false, { removed: [7, 9007199254740991], after: 't' }).toString()).toBe(
      '{"data":{"visits":[],"removed":[{"visitId":7},{"visitId":9007199254740991}]},"paging":{"after":"t"}}',
    );
  });

  it('refuses a visit whose branch its names do not know, so that they are read again', () => {
    const names = new NameFragments({ clientId: 1, clientName: 'A', brands: new Map(), branches: new Map() });
    const visit = { id: 1, brandId: null, branchId: 'BR-NEW', fields: fc.sample(fields, { numRuns: 1, seed: 3 })[0] };
    expect(() => visitsPageJson([documentRow(visit)], names, false)).toThrow(StaleNames);
  });

  it('refuses a visit whose brand its names do not know (a brand added and the branch moved to it since), never writing it without its name', () => {
    const names = new NameFragments({ clientId: 1, clientName: 'A', brands: new Map([[5, 'Five']]), branches: new Map([['BR-1', { code: 'C1', name: 'One' }]]) });
    const drawn = fc.sample(fields, { numRuns: 1, seed: 4 })[0];
    expect(() => visitsPageJson([documentRow({ id: 1, brandId: 9, branchId: 'BR-1', fields: drawn })], names, false)).toThrow(StaleNames);
    // The brands it knows, and none, are written with their names.
    expect(visitsPageJson([documentRow({ id: 2, brandId: 5, branchId: 'BR-1', fields: drawn })], names, false).toString()).toContain('"brandName":"Five","branchId":"BR-1"');
    expect(visitsPageJson([documentRow({ id: 3, brandId: null, branchId: 'BR-1', fields: drawn })], names, false).toString()).toContain('"brandName":null,"branchId":"BR-1"');
  });
});
