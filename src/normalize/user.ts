/**
 * Users of the v2 users list: keyed by `uid` (the customer's id, the one used in paths; one that cannot
 * be a path segment, such as `..`, is quarantined). Per-user
 * secrets never reach the warehouse (issue 15, item 4): `marketplace.token` and `mobile.token` let
 * anyone who holds them connect sources or the mobile SDK as that user, so every field named `token`
 * (or another secret name) is replaced by [REDACTED], and the token values are masked wherever else
 * they appear (the marketplace URL carries the marketplace token in its path). Secret-looking URL
 * parameters are redacted too. Rows and quarantine entries alike.
 */
import { z } from 'zod';
import { REDACTED, redactKnownSecrets, SECRET_PARAMS } from '../redact/redact-secrets.ts';
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

/** Field names whose values are per-user secrets, wherever they sit in a user object. */
const SECRET_KEYS = new Set(SECRET_PARAMS);

/** The secret values a user object holds (`marketplace.token`, `mobile.token`, any `token` field). */
function secretValues(value: unknown, found: string[] = []): string[] {
  if (Array.isArray(value)) for (const v of value) secretValues(v, found);
  else if (isJsonObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (SECRET_KEYS.has(k.toLowerCase()) && typeof v === 'string' && v.length >= 4) found.push(v);
      else secretValues(v, found);
    }
  }
  return found;
}

function maskText(text: string, secrets: readonly string[]): string {
  let out = redactKnownSecrets(text);
  for (const secret of secrets) if (out.includes(secret)) out = out.split(secret).join(REDACTED);
  return out;
}

function redactTree(value: unknown, secrets: readonly string[]): unknown {
  if (typeof value === 'string') return maskText(value, secrets);
  if (Array.isArray(value)) return value.map((v) => redactTree(v, secrets));
  if (isJsonObject(value)) {
    return Object.fromEntries(
      Object.entries(value).map(([k, v]) => [
        k,
        SECRET_KEYS.has(k.toLowerCase()) && v !== null ? REDACTED : redactTree(v, secrets),
      ]),
    );
  }
  return value;
}

export function normalizeUser(raw: unknown, kind = 'user'): Normalized<UserRow> {
  const original = rawJsonText(raw);
  const secrets = secretValues(raw);
  const reject = (reason: string): Normalized<UserRow> => ({
    ok: false,
    quarantine: {
      kind,
      reason,
      raw: original.ok ? JSON.stringify(redactTree(raw, secrets)) : maskText(original.text, secrets),
    },
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
      marketplaceUrl: marketplaceUrl === null ? null : maskText(marketplaceUrl, secrets),
      createdAt: u.created_at,
      updatedAt: u.updated_at,
      raw: JSON.stringify(redactTree(raw, secrets)),
    },
  };
}
