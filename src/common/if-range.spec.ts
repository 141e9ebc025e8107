import { dropRangeOfWeakIfRange, ifRangeNamesWeakTag } from './if-range.js';
import type { IncomingMessage } from 'node:http';

describe('If-Range', () => {
  it('names a weak tag only with W/ before the quoted tag', () => {
    expect(ifRangeNamesWeakTag({ 'if-range': 'W/"2d72a-1a"' })).toBe(true);
    expect(ifRangeNamesWeakTag({ 'if-range': ' W/"2d72a-1a"' })).toBe(true);
    expect(ifRangeNamesWeakTag({ 'if-range': '"2d72a-1a"' })).toBe(false);
    expect(ifRangeNamesWeakTag({ 'if-range': 'Sun, 06 Dec 2026 10:57:14 GMT' })).toBe(false);
    expect(ifRangeNamesWeakTag({})).toBe(false);
  });

  it('drops the Range of a request whose If-Range is weak, and no other', () => {
    const weak = { headers: { range: 'bytes=0-9', 'if-range': 'W/"a"' } } as unknown as IncomingMessage;
    dropRangeOfWeakIfRange(weak);
    expect(weak.headers.range).toBeUndefined();
    const strong = { headers: { range: 'bytes=0-9', 'if-range': '"a"' } } as unknown as IncomingMessage;
    dropRangeOfWeakIfRange(strong);
    expect(strong.headers.range).toBe('bytes=0-9');
    const plain = { headers: { range: 'bytes=0-9' } } as unknown as IncomingMessage;
    dropRangeOfWeakIfRange(plain);
    expect(plain.headers.range).toBe('bytes=0-9');
  });
});
