/**
 * A v2 record of any resource type into rows: the fields every record shares, then its type's own
 * (measurements, nutrition, intraday series, and a generic path for types not modelled yet).
 */

import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  emptyChildren,
  type IntradaySeriesRow,
  type MetricRow,
  type Normalized,
  type NormalizedRecord,
  type RecordRow,
} from './normalized-types.ts';
import {
  describeIssues,
  describeJsonType,
  idSchema,
  isJsonObject,
  looseText,
  optionalNumber,
  optionalText,
  optionalTimestamp,
  parseTimestamp,
  rawJsonText,
  timestampSchema,
  utcOffsetSeconds,
} from './parse-helpers.ts';

/**
 * A v2 record of any resource type → rows, or a quarantine entry. Dispatches on `type`; unknown types
 * take the generic path (common fields + metrics + raw). Never throws for bad input.
 */
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

/**
 * The common envelope every v2 record shares (spec: "Common record fields"), whatever its type, and the
 * metric object of measurement/nutrition records. Type-specific normalizers extend `recordCommonSchema`.
 */
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

/** Measurement records (`type` measurement or measurements): common fields + metrics. */
export const measurementSchema = recordCommonSchema.extend({
  metrics: z.array(metricSchema).nullish(),
});

export function normalizeMeasurement(
  parsed: z.output<typeof measurementSchema>,
  rawText: string,
): NormalizedRecord {
  return { ...emptyChildren(), record: recordRowFrom(parsed, rawText), metrics: metricRows(parsed.metrics) };
}

/**
 * Nutrition records: common fields, record-level metrics, `name`/`category`, and segments, each with
 * metrics and food items (food with its own metrics and serving).
 */
const foodSchema = z
  .object({
    name: optionalText,
    brand: optionalText,
    metrics: z.array(metricSchema).nullish(),
    serving: z.object({ amount: optionalNumber, unit_name: optionalText }).loose().nullish(),
  })
  .loose();

const segmentSchema = z
  .object({
    name: optionalText,
    metrics: z.array(metricSchema).nullish(),
    food: z.array(foodSchema).nullish(),
  })
  .loose();

export const nutritionSchema = recordCommonSchema.extend({
  name: optionalText,
  category: optionalText,
  metrics: z.array(metricSchema).nullish(),
  segments: z.array(segmentSchema).nullish(),
});

export function normalizeNutrition(
  parsed: z.output<typeof nutritionSchema>,
  rawText: string,
): NormalizedRecord {
  const out: NormalizedRecord = {
    ...emptyChildren(),
    record: recordRowFrom(parsed, rawText, { name: parsed.name, category: parsed.category }),
    metrics: metricRows(parsed.metrics),
  };
  (parsed.segments ?? []).forEach((segment, segmentIndex) => {
    out.segments.push({ segmentIndex, name: segment.name });
    for (const m of metricRows(segment.metrics)) out.segmentMetrics.push({ ...m, segmentIndex });
    (segment.food ?? []).forEach((food, foodIndex) => {
      out.food.push({
        segmentIndex,
        foodIndex,
        name: food.name,
        brand: food.brand,
        servingAmount: food.serving?.amount ?? null,
        servingUnitName: food.serving?.unit_name ?? null,
      });
      for (const m of metricRows(food.metrics)) out.foodMetrics.push({ ...m, segmentIndex, foodIndex });
    });
  });
  return out;
}

/**
 * Every other record type: summary, workout, sleep, cgm and types the worker does not know yet
 * (PLATFORM-FACTS: "must still be stored, never dropped"). Only the common envelope is required; each
 * metric is kept when it parses as a plain metric (record_metrics) or as a series with data_points
 * (intraday_series, e.g. cgm; bad points are left out and counted as in normalize-record.ts); a metric of an unexpected shape is skipped here but stays in `raw`.
 */
function text(value: unknown): string | null {
  return typeof value === 'string' ? value : null;
}

export function normalizeGeneric(
  parsed: z.output<typeof recordCommonSchema>,
  rawText: string,
  raw: Record<string, unknown>,
): NormalizedRecord {
  const granularity = granularitySchema.safeParse(raw.granularity);
  const out: NormalizedRecord = {
    ...emptyChildren(),
    record: recordRowFrom(parsed, rawText, {
      name: text(raw.name),
      category: text(raw.category),
      granularityInterval: granularity.success ? (granularity.data?.interval ?? null) : null,
      granularityUnit: granularity.success ? (granularity.data?.unit ?? null) : null,
    }),
  };
  const metrics = Array.isArray(raw.metrics) ? raw.metrics : [];
  metrics.forEach((metric, metricIndex) => {
    const hasPoints =
      metric &&
      typeof metric === 'object' &&
      Array.isArray((metric as { data_points?: unknown }).data_points);
    if (hasPoints) {
      const series = intradayMetricSchema.safeParse(metric);
      if (series.success) {
        out.intraday.push(seriesRow(series.data, metricIndex));
        noteBadPoints(out, series.data, metricIndex);
      }
      return;
    }
    const plain = metricSchema.safeParse(metric);
    if (plain.success) {
      const m = plain.data;
      out.metrics.push({ metricIndex, type: m.type, origin: m.origin, unit: m.unit, value: m.value });
    }
  });
  return out;
}

/**
 * Intraday records: common fields, `granularity`, and metrics whose `data_points` become one series
 * row per metric with parallel time[]/value[] arrays (arrays load faster and take far less space
 * than a row per point). A point value may be a number or a numeric string (the spec
 * describes a string, samples carry numbers).
 */
interface Series {
  times: string[];
  values: number[];
  /** The points left out, each as `data_points[i].field: why` (issue 15, item 3). */
  bad: string[];
}

const shown = (value: unknown) => (JSON.stringify(value) ?? 'undefined').slice(0, 40);

/**
 * data_points → parallel arrays. Hand-rolled rather than a zod object per point: an intraday batch has
 * hundreds of thousands of points and this loop is ~10x faster. A point that is not an object, has no
 * valid time or no finite value (null, empty, "n/a") is LEFT OUT and named in `bad`: one bad point of a
 * day must not hide the day's other points (the record is loaded, `bad_points` counts the gaps, and
 * the loader files an informational quarantine entry naming them; raw keeps every point).
 */
const dataPointsSchema = z
  .array(z.unknown())
  .nullish()
  .transform((points): Series | null => {
    if (!points) return null;
    const times: string[] = [];
    const values: number[] = [];
    const bad: string[] = [];
    for (let i = 0; i < points.length; i += 1) {
      const point = points[i] as { time?: unknown; value?: unknown } | null;
      if (typeof point !== 'object' || point === null || Array.isArray(point)) {
        bad.push(`data_points[${i}]: not an object: ${shown(point)}`);
        continue;
      }
      const time = typeof point.time === 'string' ? parseTimestamp(point.time) : null;
      if (time === null) {
        bad.push(`data_points[${i}].time: not a timestamp: ${shown(point.time ?? null)}`);
        continue;
      }
      const raw = point.value;
      const value =
        typeof raw === 'number'
          ? raw
          : typeof raw === 'string' && raw.trim() !== ''
            ? Number(raw)
            : Number.NaN;
      if (!Number.isFinite(value)) {
        bad.push(`data_points[${i}].value: not a finite number: ${shown(raw)}`);
        continue;
      }
      times.push(time);
      values.push(value);
    }
    return { times, values, bad };
  });

export const intradayMetricSchema = z
  .object({
    type: z.string().min(1, 'must not be empty'),
    unit: optionalText,
    origin: optionalText,
    value: optionalNumber,
    data_points: dataPointsSchema,
  })
  .loose();

export const intradaySchema = recordCommonSchema.extend({
  granularity: granularitySchema,
  metrics: z.array(intradayMetricSchema).nullish(),
});

export function seriesRow(
  metric: z.output<typeof intradayMetricSchema>,
  metricIndex: number,
): IntradaySeriesRow {
  return {
    metricIndex,
    metricType: metric.type,
    unit: metric.unit,
    origin: metric.origin,
    times: metric.data_points?.times ?? [],
    values: metric.data_points?.values ?? [],
    badPoints: metric.data_points?.bad.length ?? 0,
  };
}

export function normalizeIntraday(
  parsed: z.output<typeof intradaySchema>,
  rawText: string,
): NormalizedRecord {
  const out: NormalizedRecord = {
    ...emptyChildren(),
    record: recordRowFrom(parsed, rawText, {
      granularityInterval: parsed.granularity?.interval ?? null,
      granularityUnit: parsed.granularity?.unit ?? null,
    }),
  };
  (parsed.metrics ?? []).forEach((metric, metricIndex) => {
    // A metric with a single value and no points is a plain metric, not a series.
    if (!metric.data_points && metric.value !== null) {
      out.metrics.push({
        metricIndex,
        type: metric.type,
        origin: metric.origin,
        unit: metric.unit,
        value: metric.value,
      });
    } else {
      out.intraday.push(seriesRow(metric, metricIndex));
      noteBadPoints(out, metric, metricIndex);
    }
  });
  return out;
}

/** Names the points a series left out on the record (`metrics[2].data_points[7].value: …`). */
export function noteBadPoints(
  out: NormalizedRecord,
  metric: z.output<typeof intradayMetricSchema>,
  metricIndex: number,
): void {
  for (const bad of metric.data_points?.bad ?? []) out.badPoints.push(`metrics[${metricIndex}].${bad}`);
}
