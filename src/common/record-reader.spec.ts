import { RecordReader } from './record-reader.js';

describe('RecordReader', () => {
  it.each([[[1, 2]], [null], ['text'], [7]])('says of %j only that it is no JSON object, not that each field is missing', (value) => {
    const r = new RecordReader(value);
    expect([r.int('visitId'), r.string('branchId'), r.string('guestId', { required: false })]).toEqual([null, null, null]);
    expect(r.errors).toEqual(['the record must be a JSON object.']);
    expect(r.ok).toBe(false);
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
});
