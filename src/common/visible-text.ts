/** Characters a message does not quote as they are: controls, and format characters such as U+202E, which reorders what follows it on screen. */
const HIDDEN = /[\p{Cc}\p{Cf}]/gu;

/**
 * Text cut to its first `max` characters, with `…` when it was longer. Cut between characters,
 * never inside one beyond the BMP: half of a surrogate pair made an answer's JSON hold a lone
 * `\ud83d`, which strict parsers refuse.
 */
export function cutText(text: string, max: number): string {
  if (text.length <= max) return text;
  let end = 0;
  let characters = 0;
  for (const character of text) {
    if (characters === max) return `${text.slice(0, end)}…`;
    end += character.length;
    characters++;
  }
  return text;
}

/** A name (a parameter's, a form field's) as a message quotes it: at most 40 characters (see cutText), with no control or format characters. */
export function visibleName(name: string): string {
  return cutText(name.replace(HIDDEN, '?'), 40);
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
