/** A token character of RFC 9110 §5.6.2 (a header or parameter name). */
const TOKEN_CHAR = /[!#$%&'*+.^_`|~0-9A-Za-z-]/;

/**
 * The names of a header value's parameters (`form-data; name="a"; filename="b"` gives name and
 * filename), in lower case, in order; quoted strings are passed over whole, whatever they hold.
 */
export function parameterNames(value: string): string[] {
  return parameters(value).map(({ name }) => name);
}

/**
 * The first value of a header value's parameter `name` (in lower case), a quoted string
 * unquoted; undefined when the value names no such parameter. Read as parameterNames reads
 * them: a `; name=` inside another parameter's quoted string is no parameter.
 */
export function parameterValue(value: string, name: string): string | undefined {
  return parameters(value).find((parameter) => parameter.name === name)?.value;
}

/** A header value's parameters, names in lower case, in order; quoted strings passed over whole. */
function parameters(value: string): { name: string; value: string }[] {
  const found: { name: string; value: string }[] = [];
  let at = value.indexOf(';');
  while (at >= 0 && at < value.length) {
    at++;
    while (value[at] === ' ' || value[at] === '\t') at++;
    let name = '';
    while (at < value.length && TOKEN_CHAR.test(value[at])) name += value[at++];
    if (name !== '' && value[at] === '=') found.push({ name: name.toLowerCase(), value: valueAt(value, at + 1) });
    // On to the next ';' outside a quoted string.
    while (at < value.length && value[at] !== ';') {
      if (value[at] === '"') {
        at++;
        while (at < value.length && value[at] !== '"') at += value[at] === '\\' ? 2 : 1;
      }
      at++;
    }
  }
  return found;
}

/**
 * The parameter value that starts at `at`: a quoted string without its quotes and escapes, or a
 * token. As the multipart reader unquotes it: a backslash escapes a quote or a backslash, and is
 * kept before any other character (`"a\\b"` is `a\b`, not `ab`).
 */
function valueAt(value: string, at: number): string {
  let text = '';
  if (value[at] === '"') {
    for (at++; at < value.length && value[at] !== '"'; at++) {
      if (value[at] === '\\' && (value[at + 1] === '"' || value[at + 1] === '\\')) at++;
      if (at < value.length) text += value[at];
    }
    return text;
  }
  while (at < value.length && TOKEN_CHAR.test(value[at])) text += value[at++];
  return text;
}

/** What a header value repeats of its parameters, as a sentence's end; undefined when none is repeated. */
export function repeatedParameter(header: string, value: string): string | undefined {
  const seen = new Set<string>();
  for (const name of parameterNames(value)) {
    if (seen.has(name)) return `names its ${header} parameter '${name}' more than once`;
    seen.add(name);
  }
  return undefined;
}
