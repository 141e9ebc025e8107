import { importOutput, visible } from './context.js';

describe('visible', () => {
  it('writes control and format characters and the line and paragraph separators as escapes, and leaves other text as it is', () => {
    expect(visible('a\nb\tc\u001b[2J\u0085d\u200be\u2028f\u2029g')).toBe('a\\nb\\tc\\u{1b}[2J\\u{85}d\\u{200b}e\\u{2028}f\\u{2029}g');
    expect(visible('Café 🍕 \uFEFF e\u0301')).toBe('Café 🍕 \\u{feff} e\u0301');
  });

  it('keeps a value quoted in an import report from forging a line of it, with a line separator too', () => {
    const { text } = importOutput({ file: 'menus.ndjson', imported: 0, rejected: [{ line: 3, errors: ["'order' must be an integer: 'x\u2028  line 4: fake'."] }] });
    expect(text.split(/\n|\u2028|\u2029/)).toEqual(['menus.ndjson: imported 0, rejected 1', "  line 3: 'order' must be an integer: 'x\\u{2028}  line 4: fake'."]);
  });
});
