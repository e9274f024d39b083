/**
 * The common envelope every v2 record shares (spec: "Common record fields"), whatever its type, and the
 * metric object of measurement/nutrition records. Type-specific normalizers extend `recordCommonSchema`.
 */
import { createHash } from 'node:crypto';
import { z } from 'zod';
import type { MetricRow, RecordRow } from './normalized-types.ts';
import {
  idSchema,
  looseText,
  optionalNumber,
  optionalText,
  optionalTimestamp,
  timestampSchema,
  utcOffsetSeconds,
} from './zod-helpers.ts';

export const metricSchema = z
  .object({
    type: z.string().min(1, 'must not be empty'),
    origin: optionalText,
    unit: optionalText,
    value: optionalNumber,
  })
  .loose();

export type ParsedMetric = z.output<typeof metricSchema>;

/** `measurements` (the field description) and `measurement` (the samples) are the same type. */
export function canonicalType(type: string): string {
  return type === 'measurements' ? 'measurement' : type;
}

export const recordCommonSchema = z
  .object({
    id: idSchema,
    type: z.string().min(1, 'must not be empty'),
    checksum: looseText,
    version: looseText,
    start_time: optionalTimestamp,
    end_time: optionalTimestamp,
    utc_offset: utcOffsetSeconds,
    offset_origin: optionalText,
    user: z.object({ uid: looseText, user_id: looseText }).loose().nullish(),
    log_id: looseText,
    source: z.object({ type: optionalText, device: z.unknown().optional() }).loose().nullish(),
    created_at: timestampSchema,
    deleted_at: optionalTimestamp,
    tags: z.unknown().optional(),
    user_notes: z.unknown().optional(),
  })
  .loose();

export type ParsedCommon = z.output<typeof recordCommonSchema>;

const jsonOrNull = (value: unknown): string | null =>
  value === undefined || value === null ? null : JSON.stringify(value);

/**
 * The checksum is what dedupe compares. A record without one (not seen in the spec, but an unknown type
 * might lack it) gets a stable stand-in derived from its content, so redelivery is still a no-op.
 */
export function checksumOf(parsed: ParsedCommon, rawText: string): string {
  return parsed.checksum ?? `sha256:${createHash('sha256').update(rawText).digest('hex')}`;
}

export function recordRowFrom(
  parsed: ParsedCommon,
  rawText: string,
  extra: Partial<RecordRow> = {},
): RecordRow {
  return {
    id: parsed.id,
    type: canonicalType(parsed.type),
    version: parsed.version,
    checksum: checksumOf(parsed, rawText),
    uid: parsed.user?.uid ?? null,
    userId: parsed.user?.user_id ?? null,
    sourceType: parsed.source?.type ?? null,
    sourceDevice: jsonOrNull(parsed.source?.device),
    logId: parsed.log_id,
    startTime: parsed.start_time,
    endTime: parsed.end_time,
    utcOffset: parsed.utc_offset,
    offsetOrigin: parsed.offset_origin,
    createdAt: parsed.created_at,
    deletedAt: parsed.deleted_at,
    tags: jsonOrNull(parsed.tags),
    userNotes: jsonOrNull(parsed.user_notes),
    name: null,
    category: null,
    granularityInterval: null,
    granularityUnit: null,
    raw: rawText,
    ...extra,
  };
}

export function metricRows(metrics: readonly ParsedMetric[] | null | undefined): MetricRow[] {
  return (metrics ?? []).map((m, metricIndex) => ({
    metricIndex,
    type: m.type,
    origin: m.origin,
    unit: m.unit,
    value: m.value,
  }));
}

export const granularitySchema = z
  .object({
    interval: optionalNumber.refine(
      (v) => v === null || (Number.isInteger(v) && Math.abs(v) < 2 ** 31),
      'must be a whole number',
    ),
    unit: optionalText,
  })
  .loose()
  .nullish();
