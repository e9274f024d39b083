/**
 * What every parser of normalize/ shares: zod helpers that quarantine with a reason, tolerant where the
 * platform is known to vary (ids as numbers, numeric strings, both timestamp forms) and strict where a
 * value would be meaningless; the platform's timestamps read strictly, the shape of a JSON value, and the
 * raw JSON kept as it came (secrets redacted).
 */
import { z } from 'zod';
import { isJsonNumberText, type JsonNumberText, jsonNumberText } from '../pipeline/exact-json.ts';
import { refinePathSegment } from '../validic/platform-limits.ts';

/** A number kept exactly as sent (src/pipeline/exact-json.ts). */
const numberTextSchema = z.custom<JsonNumberText>(isJsonNumberText, 'not a number');

/** A number's text: its source text when the parse kept it, else what the double prints. */
const numberAsText = (value: number | JsonNumberText) =>
  typeof value === 'number' ? String(value) : value.rawJSON;

/** A non-empty id; a number is accepted and kept as its text (as sent). */
export const idSchema = z
  .union([z.string().min(1, 'must not be empty'), z.number().finite(), numberTextSchema])
  .transform((v) => (typeof v === 'string' ? v : numberAsText(v)));

/**
 * An id that later goes into a URL path (a user's `uid`): `idSchema`, and usable as one path segment
 * (not `.` or `..`, no control characters; src/validic/platform-limits.ts), so a bad one is quarantined
 * here instead of failing every request built from it.
 */
export const pathIdSchema = idSchema.superRefine(refinePathSegment);

/** Optional text that may come as a number (ids, versions), kept as sent (`1.0` stays `1.0`). */
export const looseText = z
  .union([z.string(), z.number().finite(), numberTextSchema])
  .nullish()
  .transform((v) => (v === null || v === undefined ? null : typeof v === 'string' ? v : numberAsText(v)));

export const optionalText = z
  .string()
  .nullish()
  .transform((v) => v ?? null);

/** A timestamp in any accepted form, canonicalized to UTC ISO. */
export const timestampSchema = z.string().transform((value, ctx) => {
  const parsed = parseTimestamp(value);
  if (parsed === null) {
    ctx.addIssue({ code: 'custom', message: `not a timestamp: ${JSON.stringify(value.slice(0, 40))}` });
    return z.NEVER;
  }
  return parsed;
});

export const optionalTimestamp = timestampSchema.nullish().transform((v) => v ?? null);

/**
 * A number exactly as sent: a plain JS number when a double holds it as written, else its JSON text
 * (src/pipeline/exact-json.ts), which the warehouse's jsonb stores exactly.
 */
export type JsonNumber = number | JsonNumberText;

/** The JSON number grammar (RFC 8259, section 6), nothing before or after it. */
const JSON_NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/;

export type ReadNumber = { ok: true; value: JsonNumber; double: number } | { ok: false; reason: string };

/**
 * How every number of the platform is read, v2 and v1 alike (the legacy views' `validic.json_number`,
 * migration 0029, is the same rule in SQL): a JSON number, or a string holding exactly one by the JSON
 * grammar (`"61.5"`, `"1e3"`; not `" 61.5"`, `"0x1A"`, `"Infinity"`, `"1_000"`, `"+1"`, `".5"`, `""`),
 * whose value double precision can hold (not beyond ±1.8e308, not a nonzero that rounds to 0). The
 * spec describes some numbers as strings; nothing promises any other spelling, so anything else is
 * not a number, and says so.
 */
export function readJsonNumber(value: unknown): ReadNumber {
  let text: string;
  if (typeof value === 'number') {
    if (Number.isFinite(value)) return { ok: true, value, double: value };
    return { ok: false, reason: `not a finite number: ${value}` };
  }
  if (isJsonNumberText(value)) text = value.rawJSON;
  else if (typeof value === 'string' && JSON_NUMBER.test(value)) text = value;
  else return { ok: false, reason: `not a number: ${shown(value)}` };
  const double = Number(text);
  const mantissa = text.split(/[eE]/)[0]!;
  if (!Number.isFinite(double) || (double === 0 && /[1-9]/.test(mantissa)))
    return { ok: false, reason: `outside the range of double precision: ${shown(text)}` };
  return { ok: true, value: String(double) === text ? double : jsonNumberText(text), double };
}

/** A value for messages: its JSON, cut to 40 characters. */
export const shown = (value: unknown) => (JSON.stringify(value) ?? 'undefined').slice(0, 40);

/** A number read by readJsonNumber, or null when absent or null. */
export const optionalNumber = z.unknown().transform((value, ctx): JsonNumber | null => {
  if (value === null || value === undefined) return null;
  const read = readJsonNumber(value);
  if (!read.ok) {
    ctx.addIssue({ code: 'custom', message: read.reason });
    return z.NEVER;
  }
  return read.value;
});

/** The double of a number read by readJsonNumber (for columns of double precision). */
export const asDouble = (value: JsonNumber): number =>
  typeof value === 'number' ? value : Number(value.rawJSON);

/** Larger than any real offset (±14 h), small enough for an integer column. */
const MAX_OFFSET_SECONDS = 48 * 3600;

/** Whole seconds; v2 gives an integer, a `+hh:mm` string is converted. */
export const utcOffsetSeconds = z
  .union([z.number(), z.string(), numberTextSchema])
  .nullish()
  .transform((value, ctx) => {
    if (value === null || value === undefined) return null;
    if (typeof value !== 'string') {
      const seconds = typeof value === 'number' ? value : Number(value.rawJSON);
      if (Number.isInteger(seconds) && Math.abs(seconds) <= MAX_OFFSET_SECONDS) return seconds;
      ctx.addIssue({
        code: 'custom',
        message: `utc_offset is not a whole number of seconds within ±48 h: ${numberAsText(value)}`,
      });
      return z.NEVER;
    }
    const hhmm = /^([+-])(\d{1,2}):?(\d{2})$/.exec(value.trim());
    if (hhmm) return (hhmm[1] === '-' ? -1 : 1) * (Number(hhmm[2]) * 3600 + Number(hhmm[3]) * 60);
    if (/^[+-]?\d+$/.test(value.trim()) && Math.abs(Number(value)) <= MAX_OFFSET_SECONDS)
      return Number(value);
    ctx.addIssue({
      code: 'custom',
      message: `utc_offset is not seconds or ±hh:mm: ${JSON.stringify(value)}`,
    });
    return z.NEVER;
  });

/** A precise, single-line reason from a zod error: `metrics.2.value: not a number: "abc"`. */
export function describeIssues(error: z.ZodError, limit = 3): string {
  const parts = error.issues.slice(0, limit).map((issue) => {
    const path = issue.path.length ? issue.path.map(String).join('.') : '(item)';
    return `${path}: ${issue.message}`;
  });
  const more = error.issues.length > limit ? ` (+${error.issues.length - limit} more)` : '';
  return parts.join('; ') + more;
}

/**
 * Timestamps arrive as `YYYY-MM-DDThh:mm:ssZ` (v2, sometimes with milliseconds) and in the legacy API
 * also as `YYYY-MM-DDThh:mm:ss.ms-hh:mm`. Both (and a missing zone, read as UTC, and a bare date, read as
 * UTC midnight) become one canonical ISO string in UTC, so Postgres never guesses a time zone.
 */
const PATTERN =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d+))?)?)?\s*(Z|z|[+-]\d{2}(?::?\d{2})?)?$/;

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28;
  return month === 4 || month === 6 || month === 9 || month === 11 ? 30 : 31;
}

/** The digit at `i` of `value` (0–9), or -1 when it is not a digit. */
function digit(value: string, i: number): number {
  const c = value.charCodeAt(i) - 48;
  return c >= 0 && c <= 9 ? c : -1;
}

/**
 * The v2 form (`YYYY-MM-DDThh:mm:ss[.f{1,3}]Z`) checked char by char: no regex, no substrings, no
 * Date objects, because this runs once per intraday point (millions in a backfill). Returns the
 * canonical text, or undefined when `value` is not in that form (the general parser decides then).
 */
function parseUtcForm(value: string): string | null | undefined {
  const n = value.length;
  if (n < 20 || n > 24 || value.charCodeAt(n - 1) !== 90 /* Z */) return undefined;
  if (
    value.charCodeAt(4) !== 45 ||
    value.charCodeAt(7) !== 45 ||
    value.charCodeAt(10) !== 84 ||
    value.charCodeAt(13) !== 58 ||
    value.charCodeAt(16) !== 58
  ) {
    return undefined;
  }
  const d0 = digit(value, 0);
  const d1 = digit(value, 1);
  const d2 = digit(value, 2);
  const d3 = digit(value, 3);
  const mo0 = digit(value, 5);
  const mo1 = digit(value, 6);
  const da0 = digit(value, 8);
  const da1 = digit(value, 9);
  const h0 = digit(value, 11);
  const h1 = digit(value, 12);
  const mi0 = digit(value, 14);
  const mi1 = digit(value, 15);
  const s0 = digit(value, 17);
  const s1 = digit(value, 18);
  if ((d0 | d1 | d2 | d3 | mo0 | mo1 | da0 | da1 | h0 | h1 | mi0 | mi1 | s0 | s1) < 0) return undefined;
  let millis = '000';
  if (n > 20) {
    // ".f", ".ff" or ".fff" before the Z.
    if (value.charCodeAt(19) !== 46 || n === 21) return undefined;
    for (let i = 20; i < n - 1; i += 1) if (digit(value, i) < 0) return undefined;
    millis = value.slice(20, n - 1).padEnd(3, '0');
  }
  const y = d0 * 1000 + d1 * 100 + d2 * 10 + d3;
  const mo = mo0 * 10 + mo1;
  const d = da0 * 10 + da1;
  if (y === 0 || mo < 1 || mo > 12 || d < 1 || d > daysInMonth(y, mo)) return null;
  if (h0 * 10 + h1 > 23 || mi0 * 10 + mi1 > 59 || s0 * 10 + s1 > 59) return null;
  return n === 24 ? value : `${value.slice(0, 19)}.${millis}Z`;
}

/** Canonical UTC ISO string, or null when `value` is not a timestamp in an accepted form. */
export function parseTimestamp(value: string): string | null {
  const fast = parseUtcForm(value);
  if (fast !== undefined) return fast;
  const m = PATTERN.exec(value.trim());
  if (!m) return null;
  const [, y, mo, d, h = '00', mi = '00', s = '00', frac = '', zone = 'Z'] = m;
  const millis = `${frac}000`.slice(0, 3);
  let offset = 'Z';
  if (zone !== 'Z' && zone !== 'z') {
    const sign = zone[0];
    const digits = zone.slice(1).replace(':', '');
    const hh = digits.slice(0, 2);
    const mm = digits.slice(2, 4) || '00';
    offset = `${sign}${hh}:${mm}`;
  }
  const text = `${y}-${mo}-${d}T${h}:${mi}:${s}.${millis}${offset}`;
  const time = Date.parse(text);
  if (Number.isNaN(time)) return null;
  // Date.parse rolls 2024-02-31 over to March: reject dates whose fields do not survive the round trip.
  const check = new Date(Date.UTC(Number(y), Number(mo) - 1, Number(d)));
  if (check.getUTCMonth() !== Number(mo) - 1 || check.getUTCDate() !== Number(d)) return null;
  // Year 0 exists in ISO 8601 but not in PostgreSQL (1 BC is year 0 there only as "0001 BC").
  if (Number(y) === 0) return null;
  if (Number(h) > 23 || Number(mi) > 59 || Number(s) > 60) return null;
  return new Date(time).toISOString();
}

/** Shape checks on parsed JSON, used to word quarantine reasons. A number kept as text is not an object. */
export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !isJsonNumberText(value);
}

/** "null", "an array", "a string", … for messages like "record is an array, not a JSON object". */
export function describeJsonType(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (isJsonNumberText(value)) return 'a number';
  return `a ${typeof value}`;
}

/**
 * The raw JSON text of an item, as it will be stored in a jsonb column. PostgreSQL refuses three things
 * JSON allows: the NUL character (`\u0000`), unpaired UTF-16 surrogates, and numbers beyond its numeric
 * type (more than 131,072 digits before the decimal point or 16,383 after it, such as `1e200000`).
 * Such an item would make the whole batch's transaction fail, so it is detected here and quarantined
 * instead. Every number is written as it was sent (src/pipeline/exact-json.ts).
 */

// JSON.stringify escapes NUL as \u0000 and lone surrogates as \udXXX (paired ones stay literal). The
// look-behind skips an escaped backslash followed by the letters "u0000".
const UNSTORABLE = /(?<!\\)(?:\\\\)*\\u(0000|d[89a-f][0-9a-f]{2})/i;

/** PostgreSQL's numeric: digits before the decimal point, and after it. */
const NUMERIC_MAX_DIGITS_BEFORE = 131_072;
const NUMERIC_MAX_DIGITS_AFTER = 16_383;

/**
 * A text that may hold a number numeric cannot: an exponent of 1,000 or more either way, or a run of
 * 8,000 digits (below both, a number needs at most 8,999 digits on either side of the point).
 */
const MAY_OVERFLOW_NUMERIC = /[eE][+-]?0*[1-9]\d{3}|\d{8000}/;
const NUMBER_TOKEN =
  /(?:^|[:,[])[ \t\n\r]*(-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)(?=[ \t\n\r]*(?:[,\]}]|$))/g;

/** Whether numeric holds the JSON number `token` (the digits its value needs on each side of the point). */
function fitsNumeric(token: string): boolean {
  const [mantissa = '', exponentText = '0'] = (token.startsWith('-') ? token.slice(1) : token).split(/[eE]/);
  const [whole = '', fraction = ''] = mantissa.split('.');
  const significant = `${whole}${fraction}`.replace(/^0+/, '');
  if (significant === '') return true;
  const exponent = Number(exponentText);
  const digitsBefore = whole.replace(/^0+/, '').length + exponent;
  const digitsAfter = fraction.length - exponent;
  return digitsBefore <= NUMERIC_MAX_DIGITS_BEFORE && digitsAfter <= NUMERIC_MAX_DIGITS_AFTER;
}

function numberTooLarge(text: string): string | undefined {
  if (!MAY_OVERFLOW_NUMERIC.test(text)) return undefined;
  for (const match of text.matchAll(NUMBER_TOKEN)) if (!fitsNumeric(match[1]!)) return match[1]!;
  return undefined;
}

export type RawText = { ok: true; text: string } | { ok: false; text: string; reason: string };

export function rawJsonText(raw: unknown): RawText {
  let text: string;
  try {
    text = JSON.stringify(raw) ?? 'null';
  } catch (error) {
    return { ok: false, text: String(raw), reason: `not serializable as JSON: ${(error as Error).message}` };
  }
  // Almost no document has a \u escape at all: skip the (slower) look-behind regex for those.
  const bad = text.includes('\\u') ? UNSTORABLE.exec(text) : null;
  if (bad) {
    const what = bad[1] === '0000' ? 'a NUL character (\\u0000)' : 'an unpaired UTF-16 surrogate';
    return { ok: false, text, reason: `contains ${what}, which PostgreSQL cannot store` };
  }
  const huge = numberTooLarge(text);
  if (huge !== undefined) {
    return {
      ok: false,
      text,
      reason: `contains a number PostgreSQL cannot store exactly (${huge.slice(0, 40)}${huge.length > 40 ? '…' : ''})`,
    };
  }
  return { ok: true, text };
}
