/**
 * Legacy (v1) records of any object (fitness, routine, nutrition, sleep, weight, diabetes, biometrics,
 * tobacco_cessation, or one not known yet): `_id` required; timestamps in either accepted form
 * (`…Z` or `….ms±hh:mm`) become UTC; object-specific fields stay in raw (typed by the legacy_* views).
 */
import { z } from 'zod';
import { describeJsonType, isJsonObject } from './json-shape.ts';
import type { LegacyRecordRow, Normalized } from './normalized-types.ts';
import { rawJsonText } from './raw-json.ts';
import { describeIssues, idSchema, looseText, optionalText, optionalTimestamp } from './zod-helpers.ts';

export const legacyRecordSchema = z
  .object({
    _id: idSchema,
    user_id: looseText,
    user: z.object({ _id: looseText }).loose().nullish(),
    timestamp: optionalTimestamp,
    utc_offset: looseText,
    last_updated: optionalTimestamp,
    source: optionalText,
    source_name: optionalText,
    activity_id: looseText,
    validated: z
      .union([z.boolean(), z.enum(['true', 'false'])])
      .nullish()
      .transform((v) => (v === null || v === undefined ? null : v === true || v === 'true')),
  })
  .loose();

export function normalizeLegacyRecord(object: string, raw: unknown): Normalized<LegacyRecordRow> {
  const kind = `legacy:${object}`;
  const rawText = rawJsonText(raw);
  const reject = (reason: string): Normalized<LegacyRecordRow> => ({
    ok: false,
    quarantine: { kind, reason, raw: rawText.text },
  });
  if (!rawText.ok) return reject(rawText.reason);
  if (!/^[a-z][a-z0-9_]*$/.test(object))
    return reject(`invalid legacy object name ${JSON.stringify(object)}`);
  if (!isJsonObject(raw))
    return reject(`legacy ${object} record is ${describeJsonType(raw)}, not a JSON object`);
  const parsed = legacyRecordSchema.safeParse(raw);
  if (!parsed.success) return reject(`invalid legacy ${object} record: ${describeIssues(parsed.error)}`);
  const r = parsed.data;
  return {
    ok: true,
    value: {
      object,
      id: r._id,
      userId: r.user_id ?? r.user?._id ?? null,
      timestamp: r.timestamp,
      utcOffset: r.utc_offset,
      lastUpdated: r.last_updated,
      source: r.source,
      sourceName: r.source_name,
      activityId: r.activity_id,
      validated: r.validated,
      raw: rawText.text,
    },
  };
}
