/**
 * A v2 record of any resource type into rows: the fields every record shares, then its type's own
 * (measurements, nutrition, intraday series, and a generic path for types not modelled yet).
 */

import { createHash } from 'node:crypto';
import { z } from 'zod';
import {
  emptyChildren,
  type MetricRow,
  type Normalized,
  type NormalizedRecord,
  type RecordRow,
} from './normalized-types.ts';
import {
  asDouble,
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
  readJsonNumber,
  shown,
  timestampSchema,
  utcOffsetSeconds,
} from './parse-helpers.ts';

/**
 * A v2 record of any resource type → rows, or a quarantine entry. Dispatches on `type`; unknown types
 * take the generic path (common fields + metrics + raw). Never throws for bad input.
 *
 * The common envelope (id, created_at, checksum, times, user, source: what identifies, orders and
 * places the record) must be readable, or the record is quarantined whole. Every other part is read on
 * its own, the same way for every type: a metric (record, segment or food level, or an intraday
 * metric) that cannot be read is left out, a field of a nested part (a food's serving, a name, the
 * granularity) that cannot be read is left null, a series point that cannot be read is left out of its
 * series; each is named in `badValues` / `badPoints`, the record loads with everything else, and the
 * loader files one informational quarantine entry naming them (`raw` keeps them all).
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
    const parsed = recordCommonSchema.safeParse(raw);
    if (!parsed.success) return reject(prefix(describeIssues(parsed.error)));
    const out: NormalizedRecord = { ...emptyChildren(), record: recordRowFrom(parsed.data, rawText.text) };
    switch (type) {
      case 'measurement':
        out.metrics = readMetrics(raw.metrics, 'metrics', out);
        break;
      case 'nutrition':
        readNutrition(raw, out);
        break;
      case 'intraday':
        readGranularity(raw, out);
        readIntradayMetrics(raw.metrics, out);
        break;
      default:
        readGeneric(raw, out);
    }
    return { ok: true, value: out };
  } catch (error) {
    // Defensive: a normalizer bug must not lose the item or kill the batch.
    return reject(`normalization failed: ${(error as Error).message}`);
  }
}

/** A metric object (spec: "Metric object"), of any record type. */
export const metricSchema = z
  .object({
    type: z.string().min(1, 'must not be empty'),
    origin: optionalText,
    unit: optionalText,
    value: optionalNumber,
  })
  .loose();

/** `measurements` (the field description) and `measurement` (the samples) are the same type. */
export function canonicalType(type: string): string {
  return type === 'measurements' ? 'measurement' : type;
}

/** The common envelope every v2 record shares (spec: "Common record fields"), whatever its type. */
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

export function recordRowFrom(parsed: ParsedCommon, rawText: string): RecordRow {
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
  };
}

/**
 * Reading the parts of a record that are not its envelope, each on its own (see normalizeRecord): what
 * cannot be read is left out and named (`metrics[2].value: not a number: "n/a"`) in `out.badValues`.
 */

/** Names what was left out at `path`. */
function leaveOut(out: NormalizedRecord, path: string, reason: string): void {
  out.badValues.push(`${path}: ${reason}`);
}

/** `metrics[2].value: …`: the first issue of a part that failed its schema at `path`. */
function leaveOutIssues(out: NormalizedRecord, path: string, error: z.ZodError): void {
  const issue = error.issues[0]!;
  const where = issue.path.length ? `${path}.${issue.path.map(String).join('.')}` : path;
  leaveOut(out, where, issue.message);
}

/** The elements of an optional array field; anything else but null or absent is left out, named. */
function elements(value: unknown, path: string, out: NormalizedRecord): unknown[] {
  if (value === undefined || value === null) return [];
  if (Array.isArray(value)) return value;
  leaveOut(out, path, `not an array: ${shown(value)}`);
  return [];
}

/** A part that must be an object to be read at all; otherwise it is left out, named. */
function objectAt(value: unknown, path: string, out: NormalizedRecord): Record<string, unknown> | undefined {
  if (isJsonObject(value)) return value;
  leaveOut(out, path, `not an object: ${shown(value)}`);
  return undefined;
}

/** A field of a part, read with `schema`; null when it cannot be read (named). */
function field<T>(
  schema: z.ZodType<T | null>,
  value: unknown,
  path: string,
  out: NormalizedRecord,
): T | null {
  const parsed = schema.safeParse(value);
  if (parsed.success) return parsed.data;
  leaveOutIssues(out, path, parsed.error);
  return null;
}

/** One metric object as a row, or undefined when it cannot be read (left out, named). */
function plainMetric(metric: unknown, metricIndex: number, where: string, out: NormalizedRecord) {
  if (!objectAt(metric, where, out)) return undefined;
  const m = metricSchema.safeParse(metric);
  if (!m.success) {
    leaveOutIssues(out, where, m.error);
    return undefined;
  }
  const { type, origin, unit, value } = m.data;
  return { metricIndex, type, origin, unit, value } satisfies MetricRow;
}

/** Metric objects (measurement, nutrition and every other type's plain metrics) → rows, each on its own. */
function readMetrics(value: unknown, path: string, out: NormalizedRecord): MetricRow[] {
  return elements(value, path, out).flatMap((element, metricIndex) => {
    const row = plainMetric(element, metricIndex, `${path}[${metricIndex}]`, out);
    return row ? [row] : [];
  });
}

/**
 * Nutrition records: `name`/`category`, record-level metrics, and segments, each with metrics and food
 * items (food with its own metrics and serving).
 */
function readNutrition(raw: Record<string, unknown>, out: NormalizedRecord): void {
  out.record.name = field(optionalText, raw.name, 'name', out);
  out.record.category = field(optionalText, raw.category, 'category', out);
  out.metrics = readMetrics(raw.metrics, 'metrics', out);
  elements(raw.segments, 'segments', out).forEach((element, segmentIndex) => {
    const at = `segments[${segmentIndex}]`;
    const segment = objectAt(element, at, out);
    if (!segment) return;
    out.segments.push({ segmentIndex, name: field(optionalText, segment.name, `${at}.name`, out) });
    for (const m of readMetrics(segment.metrics, `${at}.metrics`, out))
      out.segmentMetrics.push({ ...m, segmentIndex });
    elements(segment.food, `${at}.food`, out).forEach((foodElement, foodIndex) => {
      const foodAt = `${at}.food[${foodIndex}]`;
      const food = objectAt(foodElement, foodAt, out);
      if (!food) return;
      let serving: Record<string, unknown> | undefined;
      if (food.serving !== undefined && food.serving !== null)
        serving = objectAt(food.serving, `${foodAt}.serving`, out);
      out.food.push({
        segmentIndex,
        foodIndex,
        name: field(optionalText, food.name, `${foodAt}.name`, out),
        brand: field(optionalText, food.brand, `${foodAt}.brand`, out),
        servingAmount: serving
          ? field(optionalNumber, serving.amount, `${foodAt}.serving.amount`, out)
          : null,
        servingUnitName: serving
          ? field(optionalText, serving.unit_name, `${foodAt}.serving.unit_name`, out)
          : null,
      });
      for (const m of readMetrics(food.metrics, `${foodAt}.metrics`, out))
        out.foodMetrics.push({ ...m, segmentIndex, foodIndex });
    });
  });
}

/** A whole number that fits an integer column (granularity.interval). */
const wholeNumber = optionalNumber.transform((value, ctx) => {
  if (value === null) return null;
  const n = asDouble(value);
  if (Number.isInteger(n) && Math.abs(n) < 2 ** 31) return n;
  ctx.addIssue({ code: 'custom', message: `not a whole number: ${shown(value)}` });
  return z.NEVER;
});

/** `granularity` of intraday and other series records: interval and unit. */
function readGranularity(raw: Record<string, unknown>, out: NormalizedRecord): void {
  if (raw.granularity === undefined || raw.granularity === null) return;
  const granularity = objectAt(raw.granularity, 'granularity', out);
  if (!granularity) return;
  out.record.granularityInterval = field(wholeNumber, granularity.interval, 'granularity.interval', out);
  out.record.granularityUnit = field(optionalText, granularity.unit, 'granularity.unit', out);
}

/**
 * Every other record type: summary, workout, sleep, cgm and types the worker does not know yet (they
 * must still be stored, never dropped). The common envelope, `name`, `category`, `granularity`, and
 * each metric as a series when it has `data_points` (intraday_series, e.g. cgm), else as a plain metric.
 */
function readGeneric(raw: Record<string, unknown>, out: NormalizedRecord): void {
  out.record.name = field(optionalText, raw.name, 'name', out);
  out.record.category = field(optionalText, raw.category, 'category', out);
  readGranularity(raw, out);
  elements(raw.metrics, 'metrics', out).forEach((element, metricIndex) => {
    const where = `metrics[${metricIndex}]`;
    if (isJsonObject(element) && Array.isArray(element.data_points)) {
      readSeries(element, metricIndex, out);
      return;
    }
    const row = plainMetric(element, metricIndex, where, out);
    if (row) out.metrics.push(row);
  });
}

/**
 * Intraday records: each metric's `data_points` become one series row with parallel time[]/value[]
 * arrays (arrays load faster and take far less space than a row per point); a metric with a single
 * value and no points is a plain metric.
 */
function readIntradayMetrics(value: unknown, out: NormalizedRecord): void {
  elements(value, 'metrics', out).forEach((element, metricIndex) => {
    const where = `metrics[${metricIndex}]`;
    const metric = objectAt(element, where, out);
    if (!metric) return;
    const hasPoints = metric.data_points !== undefined && metric.data_points !== null;
    if (hasPoints || metric.value === undefined || metric.value === null) {
      readSeries(metric, metricIndex, out);
      return;
    }
    const row = plainMetric(metric, metricIndex, where, out);
    if (row) out.metrics.push(row);
  });
}

interface Series {
  times: string[];
  values: number[];
}

/**
 * data_points → parallel arrays. Hand-rolled rather than a zod object per point: an intraday batch has
 * hundreds of thousands of points and this loop is ~10x faster. A point that is not an object, has no
 * valid time or no readable value (readJsonNumber: null, empty, "n/a") is LEFT OUT and named in
 * `out.badPoints`: one bad point of a day must not hide the day's other points (the record is loaded,
 * the series' `bad_points` counts the gaps, and the loader files an informational quarantine entry
 * naming them; raw keeps every point). Values are stored as double precision (raw keeps them exact).
 */
function readPoints(points: unknown[], path: string, out: NormalizedRecord): Series {
  const times: string[] = [];
  const values: number[] = [];
  for (let i = 0; i < points.length; i += 1) {
    const point = points[i] as { time?: unknown; value?: unknown } | null;
    if (typeof point !== 'object' || point === null || Array.isArray(point)) {
      out.badPoints.push(`${path}[${i}]: not an object: ${shown(point)}`);
      continue;
    }
    const time = typeof point.time === 'string' ? parseTimestamp(point.time) : null;
    if (time === null) {
      out.badPoints.push(`${path}[${i}].time: not a timestamp: ${shown(point.time ?? null)}`);
      continue;
    }
    const raw = point.value;
    // Plain numbers, the usual case, skip the general reader.
    const read = typeof raw === 'number' && Number.isFinite(raw) ? undefined : readJsonNumber(raw);
    if (read && !read.ok) {
      out.badPoints.push(`${path}[${i}].value: ${read.reason}`);
      continue;
    }
    times.push(time);
    values.push(read ? read.double : (raw as number));
  }
  return { times, values };
}

/** The series fields of a metric with points; a metric whose type, unit or origin cannot be read is left out. */
const seriesMetricSchema = z
  .object({ type: z.string().min(1, 'must not be empty'), unit: optionalText, origin: optionalText })
  .loose();

function readSeries(metric: Record<string, unknown>, metricIndex: number, out: NormalizedRecord): void {
  const where = `metrics[${metricIndex}]`;
  const m = seriesMetricSchema.safeParse(metric);
  if (!m.success) {
    leaveOutIssues(out, where, m.error);
    return;
  }
  const points = metric.data_points ?? [];
  if (!Array.isArray(points)) {
    leaveOut(out, `${where}.data_points`, `not an array: ${shown(points)}`);
    return;
  }
  const badBefore = out.badPoints.length;
  const { times, values } = readPoints(points, `${where}.data_points`, out);
  out.intraday.push({
    metricIndex,
    metricType: m.data.type,
    unit: m.data.unit,
    origin: m.data.origin,
    times,
    values,
    badPoints: out.badPoints.length - badBefore,
  });
}
