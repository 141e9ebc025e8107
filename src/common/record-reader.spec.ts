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
});
