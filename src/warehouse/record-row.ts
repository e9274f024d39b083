/**
 * The values of one `validic.records` row and of its child rows, in the column order of both write
 * paths (the staging tables in staging-tables.ts and the column lists of the direct insert of new ids):
 * one list of values, so a field cannot be added to one path and forgotten in the other.
 */
import type { NormalizedRecord } from '../normalize/normalized-types.ts';

export function recordRowValues(r: NormalizedRecord['record']): unknown[] {
  return [
    r.id,
    r.type,
    r.version,
    r.checksum,
    r.uid,
    r.userId,
    r.sourceType,
    r.sourceDevice,
    r.logId,
    r.startTime,
    r.endTime,
    r.utcOffset,
    r.offsetOrigin,
    r.createdAt,
    r.deletedAt,
    r.tags,
    r.userNotes,
    r.name,
    r.category,
    r.granularityInterval,
    r.granularityUnit,
    r.raw,
  ];
}

/**
 * The child rows of one record, per child table, each row in that table's column order after org_id
 * (record_id first). Intraday `time` and `value` stay arrays; each write path encodes them its way.
 * One list for the loader's two write paths and the benchmark's COPY baseline, like recordRowValues.
 */
export interface RecordChildRows {
  record_metrics: unknown[][];
  nutrition_segments: unknown[][];
  nutrition_segment_metrics: unknown[][];
  nutrition_food: unknown[][];
  nutrition_food_metrics: unknown[][];
  intraday_series: unknown[][];
}

export function recordChildRows(n: NormalizedRecord): RecordChildRows {
  const id = n.record.id;
  return {
    record_metrics: n.metrics.map((m) => [id, m.metricIndex, m.type, m.origin, m.unit, m.value]),
    nutrition_segments: n.segments.map((s) => [id, s.segmentIndex, s.name]),
    nutrition_segment_metrics: n.segmentMetrics.map((m) => [
      id,
      m.segmentIndex,
      m.metricIndex,
      m.type,
      m.origin,
      m.unit,
      m.value,
    ]),
    nutrition_food: n.food.map((f) => [
      id,
      f.segmentIndex,
      f.foodIndex,
      f.name,
      f.brand,
      f.servingAmount,
      f.servingUnitName,
    ]),
    nutrition_food_metrics: n.foodMetrics.map((m) => [
      id,
      m.segmentIndex,
      m.foodIndex,
      m.metricIndex,
      m.type,
      m.origin,
      m.unit,
      m.value,
    ]),
    intraday_series: n.intraday.map((s) => [
      id,
      s.metricIndex,
      s.metricType,
      s.unit,
      s.origin,
      s.times,
      s.values,
      s.badPoints,
    ]),
  };
}
