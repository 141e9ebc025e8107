import { applyDecorators } from '@nestjs/common';
import { Transform } from 'class-transformer';
import { IsBoolean, IsIn, IsInt, IsNumber, IsString, Matches, Max, Min } from 'class-validator';

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
  return applyDecorators(Transform(toBool), IsBoolean({ message: 'true or false' }));
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
export function UrlSetting(pattern: RegExp, message: string): PropertyDecorator {
  return Matches(pattern, { message });
}
