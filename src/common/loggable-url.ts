/**
 * Query parameter names that are credentials' by themselves (short ones, which as parts of a
 * longer name would mean anything: `monkey`, `decode`), matched with `-` and `_` left out and in
 * any case, as SECRET_WORD is.
 */
const SECRET_PARAMETER = /^(pwd|key|bearer|jwt|auth|sig|code)$/i;

/**
 * Words that make any parameter name one of a credential wherever they stand in it
 * (`client_secret`, `access_token`, `x-api-key`, `sessionToken`), matched the same way.
 */
const SECRET_WORD = /secret|token|apikey|password|passwd|assertion|credential|signature|authorization/i;

/**
 * Values that are credentials wherever they stand (another parameter name, a path segment, a
 * matrix parameter): a JWT (its header is base64url JSON, `eyJ…`), this service's API keys,
 * client secrets and webhook signing secrets by their prefixes. A JWT's first segment is taken whole even when no
 * two more segments follow it (the group is then unmatched, and it is no JWT): failed there, the
 * search would start again at each later `eyJ` of the same run and read the run to its end
 * again, time that grows with the square of the run's length (a URL of 5,000 `eyJ` in a row
 * cost 36 ms of CPU to log). A JWT stands on its own, never after a letter or a digit: `eyJ`
 * inside a word is ordinary text (a dish code `TurkeyJerky.Large.2` was answered as
 * `Turk[redacted]`, now that answers are redacted too); the prefixes of keys and secrets occur
 * in no word, and are taken wherever they stand.
 */
const SECRET_VALUE = /(?<![A-Za-z0-9])eyJ[\w-]*(\.[\w-]+\.[\w-]*)?|svck_[\w-]+|svcs_[\w-]+|whsec_[\w-]+/g;

/** The API keys and signing secrets of SECRET_VALUE, for the run of a first segment that is no JWT. */
const PREFIXED_SECRET = /svck_[\w-]+|svcs_[\w-]+|whsec_[\w-]+/g;

/** The text with every value that is a credential by its form (see SECRET_VALUE, gluedJwts) replaced by `[redacted]`. */
function redactForms(text: string): string {
  // Glued ones first: SECRET_VALUE would take the payload onwards of `x<jwt>.more` (a dot stands before it) for a JWT, and leave the header.
  return gluedJwts(text).replace(SECRET_VALUE, (found: string, jwtRest: string | undefined) =>
    // A run of `eyJ` that is no JWT: the rest of the run may still hold a key or a secret.
    found.startsWith('eyJ') && jwtRest === undefined ? found.replace(PREFIXED_SECRET, '[redacted]') : '[redacted]',
  );
}

/** Runs of word characters, dots and hyphens: where a JWT stands, with whatever is glued to it. */
const DOTTED_RUN = /[\w.-]+/g;

/**
 * A JWT glued to what stands before it (`Take=1eyJ…`, a token pasted onto a value), which
 * SECRET_VALUE leaves, as it leaves `eyJ` inside a word: taken by its first two segments, which
 * are both base64url JSON objects (`eyJ…`), as no word's are (`TurkeyJerky.Large.2` is no JWT).
 * From its `eyJ` to the end of its third segment, `[redacted]`; what is glued before it stays.
 * Found in segments split at dots, not by a pattern that backtracks: linear in the text.
 */
function gluedJwts(text: string): string {
  if (!text.includes('.eyJ')) return text;
  return text.replace(DOTTED_RUN, (run) => {
    if (!run.includes('.eyJ')) return run;
    const parts = run.split('.');
    const kept: string[] = [];
    for (let i = 0; i < parts.length; ) {
      const at = parts[i].indexOf('eyJ');
      if (at >= 0 && i + 2 < parts.length && parts[i + 1].startsWith('eyJ')) {
        kept.push(`${parts[i].slice(0, at)}[redacted]`);
        i += 3;
      } else {
        kept.push(parts[i]);
        i += 1;
      }
    }
    return kept.join('.');
  });
}

/**
 * Text an error answer or a log line may hold, such as a validation message quoting a query
 * value: every value that is a credential by its form (see SECRET_VALUE) replaced by
 * `[redacted]`. The client sent it, but answers are kept where credentials must not be (the
 * client's logs, an error tracker, a proxy's): an API key put in SvcClientId was quoted back whole.
 */
export function withoutCredentials(text: string): string {
  return redactForms(text);
}

/** Whether text holds a value that is a credential by its form (see SECRET_VALUE); `[redacted]` is none. */
export function holdsCredential(text: string): boolean {
  return redactForms(text) !== text;
}

/**
 * The URL as a log line may hold it: the user name and password of a target in absolute form
 * (`http://user:password@host/…`, refused before the application but logged), the values of
 * query parameters that carry credentials (a client that sent `client_secret` or
 * `access_token` in the query string, where they do not belong), and values that are
 * credentials by their form wherever they stand, replaced by `[redacted]`; the rest as received.
 */
export function loggableUrl(url: string): string {
  return redactForms(redactEscaped(redactNamed(redactUserinfo(url))));
}

/**
 * A target in absolute form, `scheme://authority…`: the authority ends at the first `/`, `?` or
 * `#` (RFC 3986 §3.2), and its userinfo at the last `@` before that.
 */
const USERINFO = /^([A-Za-z][A-Za-z0-9+.-]*:\/\/)([^/?#]*)@/;

/** The URL with the userinfo of a target in absolute form (a user name and password) replaced by `[redacted]`. */
function redactUserinfo(url: string): string {
  return url.replace(USERINFO, '$1[redacted]@');
}

/** Text with its percent-escapes decoded, or null when it has none or they decode to no text. */
function decoded(text: string): string | null {
  if (!text.includes('%')) return null;
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}

/**
 * Path segments and query values that are credentials by their form once their escapes are
 * decoded (`%73vck_…` is an API key as much as `svck_…`), redacted whole.
 */
function redactEscaped(url: string): string {
  if (!url.includes('%')) return url;
  return url.replace(/[^/?&=;]+/g, (part) => {
    const text = decoded(part);
    return text !== null && holdsCredential(text) ? '[redacted]' : part;
  });
}

function redactNamed(url: string): string {
  const q = url.indexOf('?');
  if (q < 0) return url;
  const pairs = url.slice(q + 1).split('&');
  let redacted = false;
  for (let i = 0; i < pairs.length; i++) {
    const pair = pairs[i];
    const eq = pair.indexOf('=');
    const raw = eq < 0 ? pair : pair.slice(0, eq);
    let name = raw;
    try {
      name = decodeURIComponent(raw.replace(/\+/g, ' '));
    } catch {
      // Not percent-encoding: judged as it is.
    }
    // `name[]` and `name[key]` are the same parameter to a query parser (cut at the first
    // bracket by its index: `/\[.*$/` tried every bracket to the end, quadratic in a name of
    // thousands of brackets before a line break).
    const bracket = name.indexOf('[');
    const bare = (bracket < 0 ? name : name.slice(0, bracket)).trim().replace(/[-_]/g, '');
    if (SECRET_PARAMETER.test(bare) || SECRET_WORD.test(bare)) {
      pairs[i] = `${raw}=[redacted]`;
      redacted = true;
    }
  }
  return redacted ? `${url.slice(0, q)}?${pairs.join('&')}` : url;
}
