import { unescapeUnreserved } from './path-escapes.js';

describe('unescapeUnreserved', () => {
  it.each([
    ['/%62ranches?SvcClientId=1001', '/branches?SvcClientId=1001'],
    ['/visits/%73tandard', '/visits/standard'],
    // Letters, digits, '-', '.', '_' and '~' in either case of hex digit.
    ['/%41%7a%30%2d%2E%5f%7E', '/Az0-._~'],
    // Reserved and other characters keep their escapes: a slash inside a segment stays one.
    ['/menus/dishes/images/a%2Fb%20c%25', '/menus/dishes/images/a%2Fb%20c%25'],
    // The query is left as it is, escapes and all.
    ['/branches?x=%62', '/branches?x=%62'],
    // Not an escape.
    ['/%zz/%4', '/%zz/%4'],
    ['/branches', '/branches'],
  ])('%s → %s', (url, expected) => {
    expect(unescapeUnreserved(url)).toBe(expected);
  });
});
