/**
 * A v2 record of any resource type → rows, or a quarantine entry. Dispatches on `type`; unknown types
 * take the generic path (common fields + metrics + raw). Never throws for bad input.
 */
import { normalizeGeneric } from './generic.ts';
import { intradaySchema, normalizeIntraday } from './intraday.ts';
import { describeJsonType, isJsonObject } from './json-shape.ts';
import { measurementSchema, normalizeMeasurement } from './measurement.ts';
import type { Normalized, NormalizedRecord } from './normalized-types.ts';
import { normalizeNutrition, nutritionSchema } from './nutrition.ts';
import { rawJsonText } from './raw-json.ts';
import { canonicalType, recordCommonSchema } from './record-common.ts';
import { describeIssues } from './zod-helpers.ts';

export function normalizeRecord(raw: unknown, kind = 'record'): Normalized<NormalizedRecord> {
  const rawText = rawJsonText(raw);
  const reject = (reason: string): Normalized<NormalizedRecord> => ({
    ok: false,
    quarantine: { kind, reason, raw: rawText.text },
  });
  if (!rawText.ok) return reject(rawText.reason);
  if (!isJsonObject(raw)) return reject(`record is ${describeJsonType(raw)}, not a JSON object`);
  const type = typeof raw.type === 'string' ? canonicalType(raw.type) : undefined;
  const prefix = (reason: string) => `invalid ${type ?? 'record'}: ${reason}`;
  try {
    switch (type) {
      case 'measurement': {
        const parsed = measurementSchema.safeParse(raw);
        if (!parsed.success) return reject(prefix(describeIssues(parsed.error)));
        return { ok: true, value: normalizeMeasurement(parsed.data, rawText.text) };
      }
      case 'nutrition': {
        const parsed = nutritionSchema.safeParse(raw);
        if (!parsed.success) return reject(prefix(describeIssues(parsed.error)));
        return { ok: true, value: normalizeNutrition(parsed.data, rawText.text) };
      }
      case 'intraday': {
        const parsed = intradaySchema.safeParse(raw);
        if (!parsed.success) return reject(prefix(describeIssues(parsed.error)));
        return { ok: true, value: normalizeIntraday(parsed.data, rawText.text) };
      }
      default: {
        const parsed = recordCommonSchema.safeParse(raw);
        if (!parsed.success) return reject(prefix(describeIssues(parsed.error)));
        return { ok: true, value: normalizeGeneric(parsed.data, rawText.text, raw) };
      }
    }
  } catch (error) {
    // Defensive: a normalizer bug must not lose the item or kill the batch.
    return reject(`normalization failed: ${(error as Error).message}`);
  }
}
