import { oauthText, visibleName } from './visible-text.js';

describe('visibleName', () => {
  it('shows control and format characters as ?, and cuts a long name at 40 characters', () => {
    expect(visibleName('Visit\nTypes\u001b[31m\u202E')).toBe('Visit?Types?[31m?');
    expect(visibleName('é🍕"\\')).toBe('é🍕"\\');
    expect(visibleName('n'.repeat(41))).toBe(`${'n'.repeat(40)}…`);
  });

  it('counts a character beyond the BMP as one, and never cuts one in half', () => {
    expect(visibleName('🍕'.repeat(40))).toBe('🍕'.repeat(40));
    expect(visibleName(`x${'🍕'.repeat(40)}`)).toBe(`x${'🍕'.repeat(39)}…`);
    expect(JSON.stringify(visibleName(`x${'🍕'.repeat(40)}`))).not.toMatch(/\\ud83c/);
  });
});

describe('oauthText', () => {
  it('keeps the characters RFC 6749 §5.2 allows in an error_description, and shows any other as ?', () => {
    const allowed = Array.from({ length: 0x7f - 0x20 }, (_, i) => String.fromCharCode(0x20 + i)).join('');
    expect(oauthText(allowed)).toBe(allowed.replace('"', '?').replace('\\', '?'));
    expect(oauthText("The form field '\n\u001b[31m\u202Eé\u00C3\u00A9' holds …")).toBe("The form field '??[31m????' holds ?");
    // A character beyond the BMP is one character, shown as one ?.
    expect(oauthText('a🍕b\u007f\u0000')).toBe('a?b??');
  });
});
