/** Measurement records (`type` measurement or measurements): common fields + metrics. */
import { z } from 'zod';
import { emptyChildren, type NormalizedRecord } from './normalized-types.ts';
import { metricRows, metricSchema, recordCommonSchema, recordRowFrom } from './record-common.ts';

export const measurementSchema = recordCommonSchema.extend({
  metrics: z.array(metricSchema).nullish(),
});

export function normalizeMeasurement(
  parsed: z.output<typeof measurementSchema>,
  rawText: string,
): NormalizedRecord {
  return { ...emptyChildren(), record: recordRowFrom(parsed, rawText), metrics: metricRows(parsed.metrics) };
}
