/**
 * Loose, envelope-level validation of platform answers. Only the envelope is checked (is `data` an array
 * of objects?); the records themselves are returned as the very objects parsed from JSON, untouched,
 * because normalization validates them (and quarantines bad ones) later.
 */
import { z } from 'zod';
import { PermanentError } from '../errors.ts';

export type RawObject = Record<string, unknown>;

export const rawObject = z.custom<RawObject>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { message: 'expected a JSON object' },
);

/** The answer had a shape the platform never sends: not retried, it would be the same next time. */
export class UnexpectedResponseError extends PermanentError {
  constructor(what: string, detail: string) {
    super(
      `unexpected response from ${what}: ${detail}; check the configured base URL points at the platform`,
    );
    this.name = 'UnexpectedResponseError';
  }
}

export function parseEnvelope<T>(schema: z.ZodType<T>, body: unknown, what: string): T {
  const result = schema.safeParse(body);
  if (!result.success) {
    const issues = result.error.issues
      .slice(0, 3)
      .map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`)
      .join('; ');
    throw new UnexpectedResponseError(what, issues);
  }
  return result.data;
}

/**
 * A list answer: `{ data: [...] , meta? }`, or past the end `{}` / `{ data: [] }`. A bare array is
 * tolerated too. `key` names the list field for other envelopes (`connections`, `streams`).
 */
export function listItems(
  body: unknown,
  key: string,
  what: string,
): { items: RawObject[]; meta: RawObject | undefined } {
  const list = z.array(rawObject);
  if (Array.isArray(body)) return { items: parseEnvelope(list, body, what), meta: undefined };
  const envelope = parseEnvelope(rawObject, body, what);
  const metaResult = rawObject.safeParse(envelope.meta);
  const meta = metaResult.success ? metaResult.data : undefined;
  const raw = envelope[key] ?? (key !== 'data' ? envelope.data : undefined);
  if (raw === undefined || raw === null) return { items: [], meta };
  return { items: parseEnvelope(list, raw, `${what} (${key})`), meta };
}

/** Identity of a page (for "the server sent the same page again" detection). */
export function pageSignature(items: readonly RawObject[]): string {
  return items.map((item) => String(item.id ?? item.uid ?? item._id ?? JSON.stringify(item))).join('\u0000');
}

export function numberField(obj: RawObject | undefined, key: string): number | undefined {
  const value = obj?.[key];
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : undefined;
}
