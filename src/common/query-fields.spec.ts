import { toInteger } from './query-fields.js';

describe('toInteger', () => {
  it.each([
    ['42', 42],
    ['+42', 42],
    ['-42', -42],
    ['007', 7],
    ['-000', -0],
    ['0', 0],
    ['000', 0],
    ['1000', 1000],
    ['999999999999999', 999_999_999_999_999],
    ['0001000000000000000', Number.MAX_VALUE],
    ['-1000000000000000', -Number.MAX_VALUE],
    ['', undefined],
    ['12a', '12a'],
    ['1.5', '1.5'],
    ['+', '+'],
    [' 1', ' 1'],
  ])('%p -> %p', (value, expected) => {
    expect(toInteger({ value })).toBe(expected);
  });

  it('reads a value of many zeros in linear time', () => {
    // 500,000 zeros and a letter: the zeros and the digits after them, tried at every split, took about a minute.
    const started = Date.now();
    expect(toInteger({ value: `${'0'.repeat(500_000)}a` })).toBe(`${'0'.repeat(500_000)}a`);
    expect(toInteger({ value: `-${'0'.repeat(500_000)}12` })).toBe(-12);
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});
