/** Characters a message does not quote as they are: controls, and format characters such as U+202E, which reorders what follows it on screen. */
const HIDDEN = /[\p{Cc}\p{Cf}]/gu;

/**
 * A name (a parameter's, a form field's) as a message quotes it: at most 40 characters, with no
 * control or format characters. Cut between characters, never inside one beyond the BMP: half
 * of a surrogate pair made the answer's JSON hold a lone `\ud83d`, which strict parsers refuse.
 */
export function visibleName(name: string): string {
  const shown = name.replace(HIDDEN, '?');
  if (shown.length <= 40) return shown;
  const characters = Array.from(shown);
  return characters.length > 40 ? `${characters.slice(0, 40).join('')}…` : shown;
}

/** What an OAuth error_description may not hold (RFC 6749 §5.2: %x20-21 / %x23-5B / %x5D-7E). */
const NOT_OAUTH_TEXT = /[^\x20\x21\x23-\x5B\x5D-\x7E]/gu;

/**
 * A text as an OAuth error_description may hold it: every character outside printable ASCII,
 * and `"` and `\`, becomes `?` (a character beyond the BMP one `?`, not two).
 */
export function oauthText(text: string): string {
  return text.replace(NOT_OAUTH_TEXT, '?');
}
