/** A token character of RFC 9110 §5.6.2 (a header or parameter name). */
const TOKEN_CHAR = /[!#$%&'*+.^_`|~0-9A-Za-z-]/;

/**
 * The names of a header value's parameters (`form-data; name="a"; filename="b"` gives name and
 * filename), in lower case, in order; quoted strings are passed over whole, whatever they hold.
 */
export function parameterNames(value: string): string[] {
  const names: string[] = [];
  let at = value.indexOf(';');
  while (at >= 0 && at < value.length) {
    at++;
    while (value[at] === ' ' || value[at] === '\t') at++;
    let name = '';
    while (at < value.length && TOKEN_CHAR.test(value[at])) name += value[at++];
    if (name !== '' && value[at] === '=') names.push(name.toLowerCase());
    // On to the next ';' outside a quoted string.
    while (at < value.length && value[at] !== ';') {
      if (value[at] === '"') {
        at++;
        while (at < value.length && value[at] !== '"') at += value[at] === '\\' ? 2 : 1;
      }
      at++;
    }
  }
  return names;
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
