/**
 * Every other record type: summary, workout, sleep, cgm and types the worker does not know yet
 * (PLATFORM-FACTS: "must still be stored, never dropped"). Only the common envelope is required; each
 * metric is kept when it parses as a plain metric (record_metrics) or as a series with data_points
 * (intraday_series, e.g. cgm; bad points are left out and counted as in intraday.ts); a metric of an unexpected shape is skipped here but stays in `raw`.
 */
import type { z } from 'zod';
import { intradayMetricSchema, noteBadPoints, seriesRow } from './intraday.ts';
import { emptyChildren, type NormalizedRecord } from './normalized-types.ts';
import { granularitySchema, metricSchema, type recordCommonSchema, recordRowFrom } from './record-common.ts';

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
