/**
 * Connection events (a user connected or disconnected a source): id + action required; profile and
 * credentials (create only) and deleted_at/deleted_reason (delete only) kept when present.
 */
import { z } from 'zod';
import { describeJsonType, isJsonObject } from './json-shape.ts';
import type { ConnectionEventRow, Normalized } from './normalized-types.ts';
import { rawJsonText } from './raw-json.ts';
import { describeIssues, idSchema, looseText, optionalText, optionalTimestamp } from './zod-helpers.ts';

export const connectionEventSchema = z
  .object({
    id: idSchema,
    action: z.string().min(1, 'must not be empty'),
    user: z.object({ uid: looseText, user_id: looseText }).loose().nullish(),
    source: z.object({ type: optionalText }).loose().nullish(),
    created_at: optionalTimestamp,
    event_time: optionalTimestamp,
    deleted_at: optionalTimestamp,
    deleted_reason: optionalText,
    profile: z.unknown().optional(),
    credentials: z.unknown().optional(),
  })
  .loose();

const jsonOrNull = (value: unknown): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);

export function normalizeConnectionEvent(
  raw: unknown,
  kind = 'connection_event',
): Normalized<ConnectionEventRow> {
  const rawText = rawJsonText(raw);
  const reject = (reason: string): Normalized<ConnectionEventRow> => ({
    ok: false,
    quarantine: { kind, reason, raw: rawText.text },
  });
  if (!rawText.ok) return reject(rawText.reason);
  if (!isJsonObject(raw)) return reject(`connection event is ${describeJsonType(raw)}, not a JSON object`);
  const parsed = connectionEventSchema.safeParse(raw);
  if (!parsed.success) return reject(`invalid connection event: ${describeIssues(parsed.error)}`);
  const e = parsed.data;
  return {
    ok: true,
    value: {
      id: e.id,
      action: e.action,
      uid: e.user?.uid ?? null,
      userId: e.user?.user_id ?? null,
      sourceType: e.source?.type ?? null,
      createdAt: e.created_at,
      eventTime: e.event_time,
      deletedAt: e.deleted_at,
      deletedReason: e.deleted_reason,
      profile: jsonOrNull(e.profile),
      credentials: jsonOrNull(e.credentials),
      raw: rawText.text,
    },
  };
}
