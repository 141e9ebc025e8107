import { readFileSync } from 'node:fs';
import { RecordReader } from '../common/record-reader.js';
import { readDishFields } from './dish-fields.js';

/** The dish input's expiryDate as the published contract gives it. */
const contract = JSON.parse(readFileSync('openapi/openapi.json', 'utf8')) as {
  components: { schemas: { DishInputDto: { properties: { expiryDate: { pattern: string; maxLength: number; format?: string } } } } };
};
const expirySchema = contract.components.schemas.DishInputDto.properties.expiryDate;

const expiryOf = (expiryDate: string): string | null => {
  const r = new RecordReader({ code: 'C1', description: 'Soup', type: 'Starter', expiryDate });
  return readDishFields(r, 7)?.expiryDate ?? null;
};

describe('readDishFields', () => {
  it.each([
    ['2026-12-31', '2026-12-31'],
    ['2026-12-01T10:00:00.123456789Z', '2026-12-01'],
    ['2026-12-01T23:30:00-05:00', '2026-12-01'],
    ['2026-12-01T23:30+0530', '2026-12-01'],
    ['2026-12-01T23:30:00', '2026-12-01'],
    ['2026-02-28T24:00:00', null],
    ['2026-12-31 ', null],
    ['20261231', null],
    ['2026-12-01T10:00:00.1234567890Z', null],
    ['2026-12-01T10:00:00+24:00', null],
  ])("keeps the date of %j (%j), as the contract's pattern and length say of the form", (given, kept) => {
    expect(expiryOf(given)).toBe(kept);
    const byContract = new RegExp(expirySchema.pattern, 'u').test(given) && given.length <= expirySchema.maxLength;
    expect(byContract).toBe(kept !== null);
    expect(expirySchema.format).toBeUndefined();
  });

  it('refuses a date that does not exist, which a pattern cannot tell', () => {
    expect(expiryOf('2026-02-30')).toBeNull();
    expect(expiryOf('2024-02-29T12:00:00Z')).toBe('2024-02-29');
  });
});
