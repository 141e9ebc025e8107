import { gainedOver, selectionMark } from './visit-changes.service.js';

/** Brands of the page's client (1001): 5 and 6; the credential may list other clients' brands too. */
const clientBrands = new Map<number, string>([
  [5, 'Acme Grill'],
  [6, 'Acme Pizzeria'],
]);
const selection = (brandIds: number[] | null, visitTypes: string[] | null = null) => ({ brandIds, visitTypes });
/** 200 brands of the credential's other clients: their ids alone are over a thousand characters. */
const othersBrands = Array.from({ length: 200 }, (_, i) => 100_000 + i);

describe("a change-feed token's record of its selection", () => {
  it("lists the page's client's brands only, however many others the credential may read", () => {
    expect(selectionMark(selection([5, ...othersBrands], ['MV', 'OF']), clientBrands)).toBe('5/MV,OF');
    expect(selectionMark(selection(null), clientBrands)).toBe('*/*');
    expect(selectionMark(selection(othersBrands), clientBrands)).toBe('/*');
  });

  it("is not refused when the credential gains or loses other clients' brands", () => {
    const mark = selectionMark(selection([5, ...othersBrands]), clientBrands);
    expect(gainedOver(mark, selection([5]), clientBrands)).toEqual([]);
    expect(gainedOver(mark, selection([5, ...othersBrands, 999_999]), clientBrands)).toEqual([]);
  });

  it("names the client's brands gained, and none when narrowed", () => {
    const mark = selectionMark(selection([5]), clientBrands);
    expect(gainedOver(mark, selection([5, 6]), clientBrands)).toEqual([6]);
    expect(gainedOver(mark, selection([]), clientBrands)).toEqual([]);
    expect(gainedOver(mark, selection(null), clientBrands)).toBeNull();
    expect(gainedOver(selectionMark(selection([5], ['OF']), clientBrands), selection([5], ['OF', 'MV']), clientBrands)).toBeNull();
  });

  it('keeps a digest of a selection too long to hold, which only the same selection matches', () => {
    const manyTypes = Array.from({ length: 120 }, (_, i) => `${String.fromCharCode(65 + Math.floor(i / 26))}${String.fromCharCode(65 + (i % 26))}`);
    const mark = selectionMark(selection([5], manyTypes), clientBrands);
    expect(mark).toMatch(/^#[\w-]{22}$/);
    expect(gainedOver(mark, selection([5, ...othersBrands], manyTypes), clientBrands)).toEqual([]);
    expect(gainedOver(mark, selection([5, 6], manyTypes), clientBrands)).toBeNull();
  });

  it('takes a token of before the record as it was', () => {
    expect(gainedOver(undefined, selection([5, 6]), clientBrands)).toEqual([]);
  });
});
