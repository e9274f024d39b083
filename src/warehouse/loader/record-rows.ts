/**
 * How an item becomes a row: the columns of each table the loader writes, a record's row, and the
 * staging tables a batch is copied into.
 */
import { type RawBuilder, sql } from 'kysely';
import type {
  ConnectionEventRow,
  LegacyRecordRow,
  MetricRow,
  NormalizedRecord,
  UserRow,
} from '../../normalize/normalized-types.ts';
import type { CopyRows, WarehouseTransaction } from '../open-warehouse.ts';

/**
 * One column descriptor per table the loader writes: each column is spelled ONCE, with its PostgreSQL
 * type and the field of the normalized row it takes. From it come the staging table (record-rows.ts),
 * the COPY column list and row values, the INSERT column list and the upsert's SET list (the helpers
 * below), and the benchmark's COPY baseline. `validic.records` has its own in record-rows.ts (RECORDS),
 * whose values are computed per row at once (the series columns share one pass over the points).
 * org_id and arrived_via come from the batch, not from the row, so no descriptor lists them.
 */
export interface TableColumn {
  name: string;
  /** PostgreSQL type of the column (also of its staging column). */
  type: string;
}

export interface TableColumns<Row> {
  /** The session temp table the loader COPYs rows into. */
  staging: string;
  /** The columns of the key after org_id (never in a SET list). */
  key: readonly string[];
  columns: readonly TableColumn[];
  /** The values of `columns` for one row, in that order. */
  values(row: Row): unknown[];
}

type Field<Row> = readonly [name: string, type: string, value: (row: Row) => unknown];

/** A descriptor from one entry per column: its name, its type and where its value comes from. */
function fromFields<Row>(
  staging: string,
  key: readonly string[],
  fields: readonly Field<Row>[],
): TableColumns<Row> {
  const getters = fields.map(([, , value]) => value);
  return {
    staging,
    key,
    columns: fields.map(([name, type]) => ({ name, type })),
    values: (row) => getters.map((get) => get(row)),
  };
}

export const USERS = fromFields<UserRow>(
  'validic_stage_users',
  ['uid'],
  [
    ['uid', 'text', (u) => u.uid],
    ['user_id', 'text', (u) => u.userId],
    ['timezone', 'text', (u) => u.timezone],
    ['country_code', 'text', (u) => u.countryCode],
    ['status', 'text', (u) => u.status],
    ['marketplace_url', 'text', (u) => u.marketplaceUrl],
    ['created_at', 'timestamptz', (u) => u.createdAt],
    ['updated_at', 'timestamptz', (u) => u.updatedAt],
    ['raw', 'jsonb', (u) => u.raw],
  ],
);

export const CONNECTION_EVENTS = fromFields<ConnectionEventRow>(
  'validic_stage_connection_events',
  ['id'],
  [
    ['id', 'text', (e) => e.id],
    ['action', 'text', (e) => e.action],
    ['uid', 'text', (e) => e.uid],
    ['user_id', 'text', (e) => e.userId],
    ['source_type', 'text', (e) => e.sourceType],
    ['created_at', 'timestamptz', (e) => e.createdAt],
    ['event_time', 'timestamptz', (e) => e.eventTime],
    ['deleted_at', 'timestamptz', (e) => e.deletedAt],
    ['deleted_reason', 'text', (e) => e.deletedReason],
    ['profile', 'jsonb', (e) => e.profile],
    ['credentials', 'jsonb', (e) => e.credentials],
    ['raw', 'jsonb', (e) => e.raw],
  ],
);

export const LEGACY_RECORDS = fromFields<LegacyRecordRow>(
  'validic_stage_legacy',
  ['object', 'id'],
  [
    ['object', 'text', (r) => r.object],
    ['id', 'text', (r) => r.id],
    ['user_id', 'text', (r) => r.userId],
    ['timestamp', 'timestamptz', (r) => r.timestamp],
    ['utc_offset', 'text', (r) => r.utcOffset],
    ['last_updated', 'timestamptz', (r) => r.lastUpdated],
    ['source', 'text', (r) => r.source],
    ['source_name', 'text', (r) => r.sourceName],
    ['activity_id', 'text', (r) => r.activityId],
    ['validated', 'boolean', (r) => r.validated],
    ['raw', 'jsonb', (r) => r.raw],
  ],
);

type AnyTable = Pick<TableColumns<never>, 'columns' | 'key'>;

/** The columns not in the key: what an upsert sets and a change is detected on. */
const nonKey = (t: AnyTable) => t.columns.filter((c) => !t.key.includes(c.name));

/** `a, b, c`: the INSERT (and COPY) column list. */
export const columnList = (t: AnyTable): RawBuilder<unknown> =>
  sql.join(t.columns.map((c) => sql.ref(c.name)));

/** `s.a, s.b, s.c`: every column read from `alias` (the staging table), in column order. */
export const columnsOf = (t: AnyTable, alias: string): RawBuilder<unknown> =>
  sql.join(t.columns.map((c) => sql`${sql.raw(alias)}.${sql.ref(c.name)}`));

/** `(s.b, s.c)`: the columns outside the key read from `alias`, as one row value (change detection). */
export const valueRow = (t: AnyTable, alias: string): RawBuilder<unknown> =>
  sql`(${sql.join(nonKey(t).map((c) => sql`${sql.raw(alias)}.${sql.ref(c.name)}`))})`;

/** `b = excluded.b, c = excluded.c`: the SET list of an upsert or update from `source`, keys left out. */
export const setList = (t: AnyTable, source: string): RawBuilder<unknown> =>
  sql.join(nonKey(t).map((c) => sql`${sql.ref(c.name)} = ${sql.raw(source)}.${sql.ref(c.name)}`));

/**
 * One `validic.records` row: its columns (name and PostgreSQL type) and the values of one normalized
 * record in that order (RECORDS, the records' column descriptor, see record-rows.ts).

 * One `validic.records` row: its columns (name and PostgreSQL type) and the values of one normalized record
 * in that order (RECORDS, the records' column descriptor, see record-rows.ts). Every write path takes its
 * column list from RECORD_COLUMNS (the staging table, the COPY and parameter inserts of new ids, the update
 * of changed ones, the benchmark's COPY baseline), so a column cannot be added to one path and forgotten in
 * another.
 *
 * The nested parts of a record are stored on its own row, normalized and compact (migration 0010):
 * `metrics` and `segments` as JSON arrays of arrays, series as `series` metadata plus the points of
 * all series in two arrays (times as millisecond deltas, which compress to almost nothing at regular
 * intervals). The views record_metrics, nutrition_* and intraday_series read them back as rows.
 */
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

/** The records' descriptor (record-rows.ts): RECORD_COLUMNS and recordRowValues. */
export const RECORDS: TableColumns<NormalizedRecord> = {
  staging: 'validic_stage_records',
  key: ['id'],
  columns: RECORD_COLUMNS,
  values: recordRowValues,
};

/**
 * Session temp tables the loader COPYs a batch into before set-based INSERT … SELECT into `validic`.
 *
 * Only rows that will be written are staged (the loader first probes keys), so COPY volume follows
 * the changes, not the deliveries. They are `ON COMMIT DELETE ROWS` and created `IF NOT EXISTS` rather than `ON COMMIT DROP`: the
 * stream loads many tiny batches, and creating and dropping the tables per batch would churn the
 * system catalogs; a pooled connection keeps its empty tables for the next batch instead.
 */
export interface StagingTable {
  name: string;
  columns: readonly (readonly [name: string, type: string])[];
}

/** The staging table of a descriptor (record-rows.ts): its columns, then `extra`. */
const stagingOf = (
  table: Pick<TableColumns<never>, 'staging' | 'columns'>,
  extra: StagingTable['columns'] = [],
): StagingTable => ({
  name: table.staging,
  columns: [...table.columns.map(({ name, type }) => [name, type] as const), ...extra],
});

export const STAGE = {
  /** apply true: becomes the current version in records; false: goes to record_versions. */
  records: stagingOf(RECORDS, [['apply', 'boolean']]),
  users: stagingOf(USERS),
  events: stagingOf(CONNECTION_EVENTS),
  /** newest true: the batch's candidate for its (object, id); false: an older version, for legacy_record_versions. */
  legacy: stagingOf(LEGACY_RECORDS, [['newest', 'boolean']]),
} as const satisfies Record<string, StagingTable>;

export async function ensureStagingTable(tx: WarehouseTransaction, stage: StagingTable): Promise<void> {
  const columns = stage.columns.map(([name, type]) => `"${name}" ${type}`).join(', ');
  await sql
    .raw(`create temp table if not exists ${stage.name} (${columns}) on commit delete rows`)
    .execute(tx.db);
}

/** Creates the table if needed and COPYs `rows` (in column order) into it. */
export async function stageRows(
  tx: WarehouseTransaction & { copyRows: CopyRows },
  stage: StagingTable,
  rows: readonly (readonly unknown[])[],
): Promise<void> {
  await ensureStagingTable(tx, stage);
  if (rows.length === 0) return;
  await tx.copyRows(
    stage.name,
    stage.columns.map(([name]) => name),
    rows,
  );
}
