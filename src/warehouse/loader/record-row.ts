/**
 * One `validic.records` row: its columns (name and PostgreSQL type) and the values of one normalized
 * record in that order (RECORDS, the records' column descriptor, see table-columns.ts).
 * Why and how: ../README.md, "`loader/record-row.ts`".
 */
import type { MetricRow, NormalizedRecord } from '../../normalize/normalized-types.ts';
import type { TableColumn, TableColumns } from './table-columns.ts';

const column = (name: string, type: string): TableColumn => ({ name, type });

/** The columns the loader writes (org_id and arrived_via come from the batch). */
export const RECORD_COLUMNS: readonly TableColumn[] = [
  column('id', 'text'),
  column('type', 'text'),
  column('version', 'text'),
  column('checksum', 'text'),
  column('uid', 'text'),
  column('user_id', 'text'),
  column('source_type', 'text'),
  column('source_device', 'jsonb'),
  column('log_id', 'text'),
  column('start_time', 'timestamptz'),
  column('end_time', 'timestamptz'),
  column('utc_offset', 'integer'),
  column('offset_origin', 'text'),
  column('created_at', 'timestamptz'),
  column('deleted_at', 'timestamptz'),
  column('tags', 'jsonb'),
  column('user_notes', 'jsonb'),
  column('name', 'text'),
  column('category', 'text'),
  column('granularity_interval', 'integer'),
  column('granularity_unit', 'text'),
  column('metrics', 'jsonb'),
  column('segments', 'jsonb'),
  column('series', 'jsonb'),
  column('series_time_deltas', 'bigint[]'),
  column('series_values', 'double precision[]'),
  column('raw', 'jsonb'),
];

const metricArray = (m: MetricRow) => [m.metricIndex, m.type, m.origin, m.unit, m.value];

/** `[[metric_index, type, origin, unit, value], …]` as JSON text, or null when there are none. */
function metricsJson(metrics: readonly MetricRow[]): string | null {
  return metrics.length === 0 ? null : JSON.stringify(metrics.map(metricArray));
}

/** `[[segment_index, name, metrics, food], …]`, food `[food_index, name, brand, amount, unit, metrics]`. */
function segmentsJson(n: NormalizedRecord): string | null {
  if (n.segments.length === 0) return null;
  return JSON.stringify(
    n.segments.map((s) => [
      s.segmentIndex,
      s.name,
      n.segmentMetrics.filter((m) => m.segmentIndex === s.segmentIndex).map(metricArray),
      n.food
        .filter((f) => f.segmentIndex === s.segmentIndex)
        .map((f) => [
          f.foodIndex,
          f.name,
          f.brand,
          f.servingAmount,
          f.servingUnitName,
          n.foodMetrics
            .filter((m) => m.segmentIndex === s.segmentIndex && m.foodIndex === f.foodIndex)
            .map(metricArray),
        ]),
    ]),
  );
}

interface SeriesColumns {
  series: string | null;
  deltas: number[] | null;
  values: number[] | null;
}

/** The series' metadata and the points of all of them, times as ms after the previous point. */
function seriesColumns(n: NormalizedRecord): SeriesColumns {
  if (n.intraday.length === 0) return { series: null, deltas: null, values: null };
  const deltas: number[] = [];
  const values: number[] = [];
  let previous = 0;
  for (const s of n.intraday) {
    for (let i = 0; i < s.times.length; i += 1) {
      const ms = Date.parse(s.times[i]!);
      deltas.push(ms - previous);
      previous = ms;
      values.push(s.values[i]!);
    }
  }
  const series = n.intraday.map((s) => [
    s.metricIndex,
    s.metricType,
    s.unit,
    s.origin,
    s.badPoints,
    s.times.length,
  ]);
  return { series: JSON.stringify(series), deltas, values };
}

/** The values of RECORD_COLUMNS for one normalized record, in that order. */
export function recordRowValues(n: NormalizedRecord): unknown[] {
  const r = n.record;
  const { series, deltas, values } = seriesColumns(n);
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
    metricsJson(n.metrics),
    segmentsJson(n),
    series,
    deltas,
    values,
    r.raw,
  ];
}

/** The records' descriptor (table-columns.ts): RECORD_COLUMNS and recordRowValues. */
export const RECORDS: TableColumns<NormalizedRecord> = {
  staging: 'validic_stage_records',
  key: ['id'],
  columns: RECORD_COLUMNS,
  values: recordRowValues,
};
