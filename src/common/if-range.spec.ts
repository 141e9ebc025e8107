import { dropRangeOfUncertainIfRange, ifRangeIsUncertain } from './if-range.js';
import type { IncomingMessage } from 'node:http';

describe('If-Range', () => {
  it('is uncertain when it names a weak tag or a date, and not when it names a strong tag', () => {
    expect(ifRangeIsUncertain({ 'if-range': 'W/"2d72a-1a"' })).toBe(true);
    expect(ifRangeIsUncertain({ 'if-range': ' W/"2d72a-1a"' })).toBe(true);
    expect(ifRangeIsUncertain({ 'if-range': 'Sun, 06 Dec 2026 10:57:14 GMT' })).toBe(true);
    expect(ifRangeIsUncertain({ 'if-range': 'garbage' })).toBe(true);
    expect(ifRangeIsUncertain({ 'if-range': '"2d72a-1a"' })).toBe(false);
    expect(ifRangeIsUncertain({ 'if-range': ' "2d72a-1a"' })).toBe(false);
    expect(ifRangeIsUncertain({})).toBe(false);
  });

  it('drops the Range of a request whose If-Range is uncertain, and no other', () => {
    for (const ifRange of ['W/"a"', 'Sun, 06 Dec 2026 10:57:14 GMT']) {
      const uncertain = { headers: { range: 'bytes=0-9', 'if-range': ifRange } } as unknown as IncomingMessage;
      dropRangeOfUncertainIfRange(uncertain);
      expect([ifRange, uncertain.headers.range]).toEqual([ifRange, undefined]);
    }
    const strong = { headers: { range: 'bytes=0-9', 'if-range': '"a"' } } as unknown as IncomingMessage;
    dropRangeOfUncertainIfRange(strong);
    expect(strong.headers.range).toBe('bytes=0-9');
    const plain = { headers: { range: 'bytes=0-9' } } as unknown as IncomingMessage;
    dropRangeOfUncertainIfRange(plain);
    expect(plain.headers.range).toBe('bytes=0-9');
  });
});
