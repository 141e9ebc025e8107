import { UnkeptNumber } from './json-numbers.js';
import { isCalendarDate, isLocalDateTime, RecordReader } from './record-reader.js';

describe('RecordReader', () => {
  it.each([[[1, 2]], [null], ['text'], [7]])('says of %j only that it is no JSON object, not that each field is missing', (value) => {
    const r = new RecordReader(value);
    expect([r.int('visitId'), r.string('branchId'), r.string('guestId', { required: false }), r.array('sections')]).toEqual([null, null, null, null]);
    expect(r.errors).toEqual(['the record must be a JSON object.']);
    expect(r.ok).toBe(false);
  });

  it('refuses a name that differs from a field in case only, given alone or beside the field, once per field, nested ones by their place', () => {
    const r = new RecordReader({ EndDate: '2026-01-31', order: 2, Order: 3, ORDER: 4, name: 'ok', Dishes: [{ Keywords: ['x'] }] });
    expect(r.date('endDate', { required: false })).toBeNull();
    expect(r.has('endDate')).toBe(false);
    expect(r.int('order', { required: false })).toBe(2);
    expect(r.string('name')).toBe('ok');
    expect(r.array('dishes', { required: false })).toBeNull();
    const dish = r.nested((r.raw('Dishes') as unknown[])[0], 'dishes[0].');
    expect(dish.array('keywords', { required: false })).toBeNull();
    r.adopt(dish);
    expect(r.errors).toEqual([
      "'EndDate' is not a field: field names are case-sensitive; write 'endDate'.",
      "'Order', 'ORDER' and 'order' are both given: field names are case-sensitive; give 'order' only.",
      "'Dishes' is not a field: field names are case-sensitive; write 'dishes'.",
      "'dishes[0].Keywords' is not a field: field names are case-sensitive; write 'dishes[0].keywords'.",
    ]);
  });

  it('names each required field missing from an object', () => {
    const r = new RecordReader({ guestId: 'g' });
    r.int('visitId');
    r.string('branchId');
    expect(r.errors).toEqual(["'visitId' must not be empty.", "'branchId' must not be empty."]);
  });

  it('takes numbers and booleans of JSON as JSON numbers and booleans only: "3" is no integer there', () => {
    const r = new RecordReader({ order: '3', score: '81.5', optIn: 'true', nested: { id: '7' } });
    expect([r.int('order'), r.number('score'), r.boolean('optIn'), r.nested(r.raw('nested'), 'nested.').int('id')]).toEqual([null, null, null, null]);
    expect(r.errors).toEqual(["'order' must be an integer: '3'.", "'score' must be a number: '81.5'.", "'optIn' must be true, false or null."]);
    const json = new RecordReader({ order: 3, score: 81.5, optIn: false });
    expect([json.int('order'), json.number('score'), json.boolean('optIn')]).toEqual([3, 81.5, false]);
    expect(json.ok).toBe(true);
  });

  it('reads numbers and booleans from their text when every value is text (a CSV row)', () => {
    const r = new RecordReader({ order: '3', score: '81.5', optIn: 'true', nested: { id: '7' } }, { textValues: true });
    expect([r.int('order'), r.number('score'), r.boolean('optIn'), r.nested(r.raw('nested'), 'nested.').int('id')]).toEqual([3, 81.5, true, 7]);
    expect([r.int('score'), r.number('optIn')]).toEqual([null, null]);
    expect(r.errors).toEqual(["'score' must be an integer: '81.5'.", "'optIn' must be a number: 'true'."]);
  });

  it('says an integer past a bound breaks the bound, however many digits it has, in a CSV row or in JSON', () => {
    const csv = new RecordReader({ brandId: '99999999999999999999', order: '-99999999999999999999' }, { textValues: true });
    expect([csv.int('brandId', { min: 1, max: 2_147_483_647 }), csv.int('order', { min: 0 })]).toEqual([null, null]);
    expect(csv.errors).toEqual(["'brandId' must be less than or equal to '2147483647'.", "'order' must be greater than or equal to '0'."]);
    const json = new RecordReader({ order: 1e20, big: 9_007_199_254_740_992 });
    expect([json.int('order'), json.int('big', { max: 1e30 })]).toEqual([null, null]);
    expect(json.errors).toEqual([
      "'order' must be an integer from -9007199254740991 to 9007199254740991: '100000000000000000000'.",
      "'big' must be an integer from -9007199254740991 to 9007199254740991: '9007199254740992'.",
    ]);
  });

  it('takes the dates of the years 0001 to 9999 that exist, the years before 0100 as written', () => {
    for (const date of ['0001-01-01', '0099-12-31', '0004-02-29', '0100-01-01', '2024-02-29', '9999-12-31']) expect([date, isCalendarDate(date)]).toEqual([date, true]);
    for (const date of ['0000-01-01', '0001-02-29', '0100-02-29', '2025-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '24-01-01']) expect([date, isCalendarDate(date)]).toEqual([date, false]);
    expect(isLocalDateTime('0001-01-01T00:00:00')).toBe(true);
    const r = new RecordReader({ expiryDate: '0099-12-31', startDate: '0000-12-31', leap: '0000-02-29', none: '0000-02-30' });
    expect([r.date('expiryDate'), r.date('startDate'), r.date('leap'), r.date('none')]).toEqual(['0099-12-31', null, null, null]);
    // The year 0000 has yyyy-mm-dd's form (RFC 3339's full-date takes it): the message names the years taken, not the format.
    expect(r.errors).toEqual([
      "'startDate' must be a date in the years 0001 to 9999: '0000-12-31'.",
      "'leap' must be a date in the years 0001 to 9999: '0000-02-29'.",
      "'none' is not in the expected format yyyy-mm-dd: '0000-02-30'.",
    ]);
  });

  it('takes an instant only when its every part exists: no 30 February, no 24:00, no second 60, no offset of 24 hours', () => {
    const given = ['2026-02-28T12:00:00Z', '2024-02-29T23:59:59.999+14:00', '2026-10-31T23:59Z', '2026-06-01T10:00:00-0530'];
    const impossible = ['2026-02-30T12:00:00Z', '2026-10-31T24:00:00Z', '2026-10-31T23:60:00Z', '2026-10-31T23:59:60Z', '2026-10-31T10:00:00+24:00', '2026-10-31T10:00:00+01:60', '0000-01-01T00:00:00Z', '2026-10-31T10:00.5Z'];
    const r = new RecordReader(Object.fromEntries([...given, ...impossible].map((s, i) => [`at${i}`, s])));
    const read = [...given, ...impossible].map((_s, i) => r.instant(`at${i}`)?.toISOString() ?? null);
    expect(read).toEqual([...given.map((s) => new Date(s).toISOString()), ...impossible.map(() => null)]);
    expect(r.errors).toEqual(impossible.map((s, i) => `'at${given.length + i}' must be an ISO 8601 date-time with a zone (2026-11-01T12:25:00Z), a day and time that exist: '${s}'.`));
  });

  it('takes an instant only within the years 0001 to 9999 in UTC, which its zone may take a day as written past', () => {
    const given = ['9999-12-31T23:59:59Z', '9999-12-31T09:59:59-14:00', '0001-01-01T00:00:00Z', '0001-01-01T13:59:59-14:00'];
    const outside = ['9999-12-31T23:59:59-14:00', '9999-12-31T10:00:00-14:00', '0001-01-01T00:00:00+14:00', '0001-01-01T00:59:59+01:00'];
    const r = new RecordReader(Object.fromEntries([...given, ...outside].map((s, i) => [`at${i}`, s])));
    const read = [...given, ...outside].map((_s, i) => r.instant(`at${i}`)?.toISOString() ?? null);
    expect(read).toEqual(['9999-12-31T23:59:59.000Z', '9999-12-31T23:59:59.000Z', '0001-01-01T00:00:00.000Z', '0001-01-02T03:59:59.000Z', null, null, null, null]);
    expect(r.errors).toEqual(outside.map((s, i) => `'at${given.length + i}' must be an instant in the years 0001 to 9999 in UTC: '${s}'.`));
  });

  it('quotes a value that is no text as JSON, and names a nested value that is no object by its place', () => {
    const r = new RecordReader({ order: { a: 1 }, score: [1, 2], visitId: true, sections: [7] });
    expect([r.int('order'), r.number('score'), r.int('visitId')]).toEqual([null, null, null]);
    const section = r.nested((r.array('sections') ?? [])[0], 'sections[0].');
    r.adopt(section);
    expect(r.errors).toEqual([
      `'order' must be an integer: '{"a":1}'.`,
      "'score' must be a number: '[1,2]'.",
      "'visitId' must be an integer: 'true'.",
      "'sections[0]' must be a JSON object.",
    ]);
  });

  it('quotes at most 100 characters of a value that is no text, one nested deeper than JSON.stringify follows too, instead of throwing', () => {
    // As JSON.parse reads them from a line of an import or a dish's json part.
    const deep = (open: string, inner: string, close: string, depth: number): unknown => JSON.parse(`${open.repeat(depth)}${inner}${close.repeat(depth)}`);
    const r = new RecordReader({ order: deep('[', '', ']', 100_000), visitScore: deep('{"a":', '1', '}', 100_000), menuId: Array.from({ length: 1000 }, (_, i) => i) });
    expect([r.int('order'), r.number('visitScore'), r.id('menuId')]).toEqual([null, null, null]);
    expect(r.errors).toEqual([
      `'order' must be an integer: '${'['.repeat(100)}…'.`,
      `'visitScore' must be a number: '${'{"a":'.repeat(20)}…'.`,
      `'menuId' must be an integer: '${JSON.stringify(Array.from({ length: 1000 }, (_, i) => i)).slice(0, 100)}…'.`,
    ]);
  });

  it('quotes at most 100 characters of text given for a number, a CSV cell of megabytes or a number of a million digits (read in linear time)', () => {
    const cell = `x${'9'.repeat(2_000_000)}`;
    const r = new RecordReader({ visitScore: cell, order: '🍕'.repeat(150) }, { textValues: true });
    expect([r.number('visitScore'), r.int('order')]).toEqual([null, null]);
    const n = new RecordReader({ visitScore: new UnkeptNumber(`1${'0'.repeat(1_000_000)}.5`) });
    expect(n.number('visitScore')).toBeNull();
    expect([...r.errors, ...n.errors]).toEqual([
      `'visitScore' must be a number: '${cell.slice(0, 100)}…'.`,
      `'order' must be an integer: '${'🍕'.repeat(100)}…'.`,
      `'visitScore' has more digits than the service keeps: '1${'0'.repeat(99)}…' would be stored as 'Infinity'.`,
    ]);
  });

  it("says an id below 1 must be greater than '0', as the API's parameters say it", () => {
    const r = new RecordReader({ menuId: 0, visitId: -3, order: -1 });
    expect([r.id('menuId'), r.int('visitId', { min: 1 }), r.int('order', { min: 0 })]).toEqual([null, null, null]);
    expect(r.errors).toEqual(["'menuId' must be greater than '0'.", "'visitId' must be greater than '0'.", "'order' must be greater than or equal to '0'."]);
  });
});
