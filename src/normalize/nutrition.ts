/**
 * Nutrition records: common fields, record-level metrics, `name`/`category`, and segments, each with
 * metrics and food items (food with its own metrics and serving).
 */
import { z } from 'zod';
import { emptyChildren, type NormalizedRecord } from './normalized-types.ts';
import { metricRows, metricSchema, recordCommonSchema, recordRowFrom } from './record-common.ts';
import { optionalNumber, optionalText } from './zod-helpers.ts';

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
