import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNumber, IsString, Matches, Max, Min, ValidateBy } from 'class-validator';

/**
 * One decorator per kind of setting in {@link AppConfig}. Each applies the conversion from
 * the environment's string and every check of its kind with one message, the text that
 * follows "expected" in a configuration error, so a setting's range and its message are
 * written once and cannot drift apart. Durations are integers in a range: their unit is in
 * the setting's name (_MS, _SECONDS, _DAYS).
 */

function toInt({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^-?\d+$/.test(value.trim()) ? Number(value) : value;
}

function toNumber({ value }: { value: unknown }): unknown {
  return typeof value === 'string' && /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : value;
}

function toBool({ value }: { value: unknown }): unknown {
  if (typeof value !== 'string') return value;
  const v = value.trim().toLowerCase();
  if (['true', '1', 'yes', 'on'].includes(v)) return true;
  if (['false', '0', 'no', 'off'].includes(v)) return false;
  return value;
}

/** A whole number from `min` to `max` inclusive, written in decimal. */
export function IntSetting(min: number, max: number): PropertyDecorator {
  const message = `an integer from ${min} to ${max}`;
  return applyDecorators(Transform(toInt), IsInt({ message }), Min(min, { message }), Max(max, { message }));
}

/** A decimal number from `min` to `max` inclusive; the message names the unit. */
export function DecimalSetting(min: number, max: number, message: string): PropertyDecorator {
  return applyDecorators(Transform(toNumber), IsNumber({}, { message }), Min(min, { message }), Max(max, { message }));
}

/** true/false, also 1/0, yes/no and on/off, in any case. */
export function BooleanSetting(): PropertyDecorator {
  return applyDecorators(Transform(toBool), IsBoolean({ message: 'true or false (also 1 or 0, yes or no, on or off)' }));
}

/** One of a fixed list of words; the message lists them unless told otherwise. */
export function OneOfSetting(values: readonly string[], message = `one of ${values.join(', ')}`): PropertyDecorator {
  return IsIn(values, { message });
}

/** Text matching `pattern` (any text when none is given): names, paths, keys. */
export function TextSetting(message: string, pattern?: RegExp): PropertyDecorator {
  return pattern ? applyDecorators(IsString({ message }), Matches(pattern, { message })) : IsString({ message });
}

/**
 * A URL, or a list of them, matching `pattern`, which names the schemes allowed. Kept apart
 * from {@link TextSetting} so that the URLs of a deployment are easy to find.
 */
export function UrlSetting(pattern: RegExp, message: string, options: { userinfo?: boolean } = {}): PropertyDecorator {
  const userinfo = options.userinfo ?? true;
  return ValidateBy({
    name: 'url',
    validator: {
      // Of the pattern's form, and a URL a client library can read (a port of digits, a closed
      // IPv6 bracket): a value that is neither failed later with the library's stack.
      validate: (value: unknown) => typeof value === 'string' && pattern.test(value) && urlFault(value, userinfo) === undefined,
      // A password with a bare % (not percent-encoded) is the likely slip: the message says so.
      defaultMessage: (args) =>
        typeof args?.value === 'string' && pattern.test(args.value) && urlFault(args.value, userinfo) === 'escapes'
          ? `${message} whose user name, password and path are percent-encoded (a % that starts no escape written %25)`
          : message,
    },
  });
}

/**
 * What keeps `value` from being a URL a client library reads: `unreadable` when it does not parse
 * as a URL with a host (or, unless `userinfo`, has a user name or password); `escapes` when its
 * user name, password or path do not decode, as the database and Redis clients decode them (a
 * `%` that starts no escape throws URIError there, with a stack, at start); undefined for none.
 */
function urlFault(value: string, userinfo: boolean): 'unreadable' | 'escapes' | undefined {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'unreadable';
  }
  if (url.host === '' || (!userinfo && (url.username !== '' || url.password !== ''))) return 'unreadable';
  try {
    for (const part of [url.username, url.password, url.pathname]) decodeURIComponent(part);
  } catch {
    return 'escapes';
  }
  return undefined;
}

/**
 * Comma-separated browser origins, each written exactly as a browser sends its Origin header
 * (`scheme://host[:port]`, lower case, no default port, no path): one written otherwise, such
 * as `http://LocalHost:80`, would never match a request and CORS would fail without a word.
 */
export function OriginsSetting(): PropertyDecorator {
  return ValidateBy({
    name: 'origins',
    validator: {
      validate: (value: unknown) => typeof value === 'string' && value.split(',').every((origin) => asBrowserSends(origin) === origin),
      defaultMessage: (args) => {
        const origins = typeof args?.value === 'string' ? args.value.split(',') : [];
        const wrong = origins.find((origin) => asBrowserSends(origin) !== origin);
        const hint = wrong === undefined ? '' : asBrowserSends(wrong) ? ` ('${wrong}' is sent by browsers as '${asBrowserSends(wrong)}')` : ` ('${wrong}' is none)`;
        return `comma-separated http(s) origins as browsers send them, scheme://host[:port] in lower case, without a default port, a path or a trailing slash${hint}`;
      },
    },
  });
}

/** The origin a browser sends for a page at `text`, or null when `text` is no http(s) origin. */
function asBrowserSends(text: string): string | null {
  if (!/^https?:\/\/[^\s/]+$/i.test(text)) return null;
  try {
    const origin = new URL(text).origin;
    return origin === 'null' ? null : origin;
  } catch {
    return null;
  }
}
