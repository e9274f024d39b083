/**
 * Intraday records: common fields, `granularity`, and metrics whose `data_points` become one series
 * row per metric with parallel time[]/value[] arrays (arrays load faster and take far less space
 * than a row per point). A point value may be a number or a numeric string (the spec
 * describes a string, samples carry numbers).
 */
import { z } from 'zod';
import { emptyChildren, type IntradaySeriesRow, type NormalizedRecord } from './normalized-types.ts';
import { granularitySchema, recordCommonSchema, recordRowFrom } from './record-common.ts';
import { parseTimestamp } from './timestamps.ts';
import { optionalNumber, optionalText } from './zod-helpers.ts';

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
