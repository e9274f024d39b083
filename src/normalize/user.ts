/**
 * Users of the v2 users list: keyed by `uid` (the customer's id, the one used in paths; one that cannot
 * be a path segment, such as `..`, is quarantined). Secret-looking
 * URL parameters (e.g. a token in marketplace.url) are redacted before anything is stored.
 */
import { z } from 'zod';
import { redactKnownSecrets } from '../config/redact.ts';
import { describeJsonType, isJsonObject } from './json-shape.ts';
import type { Normalized, UserRow } from './normalized-types.ts';
import { rawJsonText } from './raw-json.ts';
import { describeIssues, looseText, optionalText, optionalTimestamp, pathIdSchema } from './zod-helpers.ts';

export const userSchema = z
  .object({
    id: looseText,
    uid: pathIdSchema,
    status: optionalText,
    marketplace: z.object({ url: optionalText }).loose().nullish(),
    location: z.object({ timezone: optionalText, country_code: optionalText }).loose().nullish(),
    created_at: optionalTimestamp,
    updated_at: optionalTimestamp,
  })
  .loose();

function redactStrings(value: unknown): unknown {
  if (typeof value === 'string') return redactKnownSecrets(value);
  if (Array.isArray(value)) return value.map(redactStrings);
  if (isJsonObject(value))
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, redactStrings(v)]));
  return value;
}

export function normalizeUser(raw: unknown, kind = 'user'): Normalized<UserRow> {
  const original = rawJsonText(raw);
  const reject = (reason: string): Normalized<UserRow> => ({
    ok: false,
    quarantine: { kind, reason, raw: redactKnownSecrets(original.text) },
  });
  if (!original.ok) return reject(original.reason);
  if (!isJsonObject(raw)) return reject(`user is ${describeJsonType(raw)}, not a JSON object`);
  const parsed = userSchema.safeParse(raw);
  if (!parsed.success) return reject(`invalid user: ${describeIssues(parsed.error)}`);
  const u = parsed.data;
  const marketplaceUrl = u.marketplace?.url ?? null;
  return {
    ok: true,
    value: {
      uid: u.uid,
      userId: u.id,
      timezone: u.location?.timezone ?? null,
      countryCode: u.location?.country_code ?? null,
      status: u.status,
      marketplaceUrl: marketplaceUrl === null ? null : redactKnownSecrets(marketplaceUrl),
      createdAt: u.created_at,
      updatedAt: u.updated_at,
      raw: JSON.stringify(redactStrings(raw)),
    },
  };
}
