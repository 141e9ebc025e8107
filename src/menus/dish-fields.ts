import { calendarDateFault, characters, isCalendarDate, isStorableText, type RecordReader } from '../common/record-reader.js';
import type { DishInput } from './menus.repository.js';

/**
 * yyyy-mm-dd, alone or starting an ISO 8601 date-time (hours 00 to 23, an optional offset): the
 * date is group 1. The contract gives it as the field's pattern; at most 35 characters.
 */
export const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})(?:T(?:[01]\d|2[0-3]):[0-5]\d(?::[0-5]\d(?:\.\d{1,9})?)?(?:Z|[+-](?:[01]\d|2[0-3]):?[0-5]\d)?)?$/;

/**
 * The dish fields of the interface, with its rules: code (max 50), description (max 250),
 * type (max 50) required; order an integer; expiryDate an ISO date; keywords strings of at
 * most 50 characters. Returns null when any rule is broken (the reader holds the messages).
 */
export function readDishFields(r: RecordReader, menuId: number): DishInput | null {
  const code = r.string('code', { max: 50 });
  const description = r.string('description', { max: 250 });
  const type = r.string('type', { max: 50 });
  const order = r.int('order', { required: false, min: -2147483648, max: 2147483647 });
  const expiryRaw = r.string('expiryDate', { required: false });
  let expiryDate: string | null = null;
  if (expiryRaw !== null) {
    // An ISO date, or an ISO 8601 date-time of which the date is kept.
    const date = ISO_DATE_TIME.exec(expiryRaw)?.[1];
    if (date !== undefined && isCalendarDate(date)) expiryDate = date;
    else r.fail('expiryDate', calendarDateFault(date ?? '', expiryRaw));
  }
  const keywords: string[] = [];
  const rawKeywords = r.array('keywords', { required: false }) ?? [];
  rawKeywords.forEach((k, i) => {
    // Kept as given, as every text is: a keyword of spaces is a keyword, an empty one none.
    if (typeof k !== 'string' || k === '') r.fail(`keywords[${i}]`, 'must be a non-empty string.');
    else if (characters(k) > 50) r.fail(`keywords[${i}]`, 'must be at most 50 characters.');
    else if (!isStorableText(k)) r.fail(`keywords[${i}]`, 'must not contain NUL characters or unpaired UTF-16 surrogates.');
    else keywords.push(k);
  });
  if (!r.ok || code === null || description === null || type === null) return null;
  return { menuId, code, description, type, order, expiryDate, keywords: JSON.stringify(keywords) };
}
