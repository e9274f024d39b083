/**
 * Loose, envelope-level validation of platform answers. Only the envelope is checked (is `data` an array
 * of objects?); the records themselves are returned as the very objects parsed from JSON, untouched,
 * because normalization validates them (and quarantines bad ones) later.
 */
import { z } from 'zod';
import { UnexpectedResponseError } from '../errors/index.ts';

export type RawObject = Record<string, unknown>;

export const rawObject = z.custom<RawObject>(
  (value) => typeof value === 'object' && value !== null && !Array.isArray(value),
  { message: 'expected a JSON object' },
);

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
 *
 * Elements that are not objects (`null`, `7`, a string) do not fail the page: a bad element is the
 * loader's to quarantine with a reason, and failing the page would keep its good records out forever
 * (the same answer comes back on every retry). They are returned apart, as `rejected`.
 */
export function listItems(
  body: unknown,
  key: string,
  what: string,
): { items: RawObject[]; rejected: unknown[]; meta: RawObject | undefined } {
  if (Array.isArray(body)) return { ...splitElements(body), meta: undefined };
  const envelope = parseEnvelope(rawObject, body, what);
  const metaResult = rawObject.safeParse(envelope.meta);
  const meta = metaResult.success ? metaResult.data : undefined;
  const raw = envelope[key] ?? (key !== 'data' ? envelope.data : undefined);
  if (raw === undefined || raw === null) return { items: [], rejected: [], meta };
  return { ...splitElements(parseEnvelope(z.array(z.unknown()), raw, `${what} (${key})`)), meta };
}

function splitElements(elements: unknown[]): { items: RawObject[]; rejected: unknown[] } {
  const items: RawObject[] = [];
  const rejected: unknown[] = [];
  for (const element of elements) {
    if (rawObject.safeParse(element).success) items.push(element as RawObject);
    else rejected.push(element);
  }
  return { items, rejected };
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
