import { characters, isCalendarDate, type RecordReader } from '../common/record-reader.js';
import type { DishInput } from './menus.repository.js';

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
    // An ISO date, or an ISO date-time of which the date is kept.
    const date = expiryRaw.slice(0, 10);
    if (isCalendarDate(date) && (expiryRaw.length === 10 || !Number.isNaN(Date.parse(expiryRaw)))) expiryDate = date;
    else r.errors.push(`'expiryDate' is not in the expected format yyyy-mm-dd: '${expiryRaw}'.`);
  }
  const keywords: string[] = [];
  const rawKeywords = r.array('keywords', { required: false }) ?? [];
  rawKeywords.forEach((k, i) => {
    if (typeof k !== 'string' || k.trim() === '') r.errors.push(`'keywords[${i}]' must be a non-empty string.`);
    else if (characters(k) > 50) r.errors.push(`'keywords[${i}]' must be at most 50 characters.`);
    else keywords.push(k);
  });
  if (!r.ok || code === null || description === null || type === null) return null;
  return { menuId, code, description, type, order, expiryDate, keywords: JSON.stringify(keywords) };
}
