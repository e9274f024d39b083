/**
 * Zod building blocks shared by the normalizers, tolerant where the platform is known to vary (ids as
 * numbers, numeric strings, both timestamp forms) and strict where a value would be meaningless.
 */
import { z } from 'zod';
import { refinePathSegment } from '../validic/path-segment.ts';
import { parseTimestamp } from './timestamps.ts';

/** A non-empty id; a number is accepted and kept as its decimal text. */
export const idSchema = z
  .union([z.string().min(1, 'must not be empty'), z.number().finite()])
  .transform(String);

/**
 * An id that later goes into a URL path (a user's `uid`): `idSchema`, and usable as one path segment
 * (not `.` or `..`, no control characters; src/validic/path-segment.ts), so a bad one is quarantined
 * here instead of failing every request built from it.
 */
export const pathIdSchema = idSchema.superRefine(refinePathSegment);

/** Optional text that may come as a number (ids, versions). */
export const looseText = z
  .union([z.string(), z.number().finite()])
  .nullish()
  .transform((v) => (v === null || v === undefined ? null : String(v)));

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

/** A finite number, or a string holding one (the spec describes some numbers as strings). */
export const numberLike = z.union([z.number(), z.string()]).transform((value, ctx) => {
  const n = typeof value === 'number' ? value : value.trim() === '' ? Number.NaN : Number(value);
  if (!Number.isFinite(n)) {
    ctx.addIssue({ code: 'custom', message: `not a finite number: ${JSON.stringify(value).slice(0, 40)}` });
    return z.NEVER;
  }
  return n;
});

export const optionalNumber = numberLike.nullish().transform((v) => v ?? null);

/** Larger than any real offset (±14 h), small enough for an integer column. */
const MAX_OFFSET_SECONDS = 48 * 3600;

/** Whole seconds; v2 gives an integer, a `+hh:mm` string is converted. */
export const utcOffsetSeconds = z
  .union([z.number(), z.string()])
  .nullish()
  .transform((value, ctx) => {
    if (value === null || value === undefined) return null;
    if (typeof value === 'number') {
      if (Number.isInteger(value) && Math.abs(value) <= MAX_OFFSET_SECONDS) return value;
      ctx.addIssue({
        code: 'custom',
        message: `utc_offset is not a whole number of seconds within ±48 h: ${value}`,
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

/** A precise, single-line reason from a zod error: `metrics.2.value: not a finite number: "abc"`. */
export function describeIssues(error: z.ZodError, limit = 3): string {
  const parts = error.issues.slice(0, limit).map((issue) => {
    const path = issue.path.length ? issue.path.map(String).join('.') : '(item)';
    return `${path}: ${issue.message}`;
  });
  const more = error.issues.length > limit ? ` (+${error.issues.length - limit} more)` : '';
  return parts.join('; ') + more;
}
