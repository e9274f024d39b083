/**
 * 0010: the warehouse at a year of a large population (docs/warehouse.md, "Storage and partitions").
 *
 * - `validic.records` and `validic.record_versions` are partitioned by RANGE on `start_time`, one
 *   partition per calendar month (UTC) in schema `validic_partitions`, plus a default partition that
 *   holds only rows without a start_time (its CHECK lets PostgreSQL add a month without scanning it).
 *   `validic_sync.create_month_partitions(first, last)` (SECURITY DEFINER, owned by validic_owner) adds
 *   missing months; the loader calls it before a batch reaches a new month, `migrate` and the worker's
 *   daily schedule call it ahead of time. A partition key must be part of every unique index, so
 *   records has a unique index on (org_id, id, start_time) instead of its primary key; (org_id, id)
 *   stays unique because the loader decides every write under its per-org key locks, and an update
 *   that changes start_time moves the row to its new month.
 * - The nested parts of a record are stored once, normalized and compact, on the record's own row:
 *   `metrics` and `segments` (jsonb arrays of arrays), intraday and CGM series as `series` (metadata)
 *   plus `series_time_deltas` (milliseconds from the previous point) and `series_values`. The former
 *   child tables (record_metrics, nutrition_*, intraday_series) are views over these columns with the
 *   same names and columns, so the loader writes one table and a partition holds a month of
 *   everything. The normalized columns do not depend on `raw`, so `raw` may be emptied (retention)
 *   while every analyst relation keeps its rows.
 * - `raw` may be null once emptied by the retention setting (`raw_emptied_at` says when).
 *
 * Existing rows are copied into the new tables (the normalized columns built from the old child
 * tables) in one transaction: a maintenance window, measured in docs/warehouse.md.
 *
 * Frozen in time: never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const NEW_RECORD_COLUMNS: [name: string, type: string, comment: string][] = [
  [
    'metrics',
    'jsonb',
    'Record-level metrics, normalized: an array of [metric_index, type, origin, unit, value]. Read them as rows through record_metrics.',
  ],
  [
    'segments',
    'jsonb',
    'Nutrition segments, normalized: [segment_index, name, metrics, food] with food items [food_index, name, brand, serving_amount, serving_unit_name, metrics]. Read them through nutrition_segments, nutrition_segment_metrics, nutrition_food and nutrition_food_metrics.',
  ],
  [
    'series',
    'jsonb',
    'Intraday/CGM series of the record: an array of [metric_index, metric_type, unit, origin, bad_points, point_count], whose points are consecutive runs of series_time_deltas and series_values. Read them through intraday_series or intraday_points.',
  ],
  [
    'series_time_deltas',
    'bigint[]',
    'Point times of all series of the record, each as milliseconds after the previous point (the first after 1970-01-01 UTC): regular intervals compress to almost nothing.',
  ],
  [
    'series_values',
    'double precision[]',
    'Point values of all series of the record, parallel to series_time_deltas.',
  ],
  [
    'raw_emptied_at',
    'timestamptz',
    'When the retention setting emptied raw (set to null); the normalized columns and every view keep the data.',
  ],
];

const RAW_COMMENT =
  'The record exactly as received, including fields without a column; null once emptied by the retention setting (raw_emptied_at).';

/**
 * The months' partitions of both tables, created by validic_owner whoever calls it. They need no
 * row-level security of their own: analysts and the loader reach them only through the parent tables
 * (no rights on schema validic_partitions), where the policies apply.
 */
const CREATE_PARTITIONS = `create or replace function validic_sync.create_month_partitions(first_month date, last_month date)
  returns integer language plpgsql security definer
  set search_path = pg_catalog, pg_temp set lock_timeout = '30s' as $fn$
  declare
    m date := date_trunc('month', first_month)::date;
    t text;
    part text;
    lo text;
    hi text;
    created integer := 0;
  begin
    if first_month is null or last_month is null then return 0; end if;
    -- Two loaders reaching the same new month at once: the second waits here and then finds it.
    perform pg_advisory_xact_lock(7436112010);
    while m <= last_month loop
      foreach t in array array['records', 'record_versions'] loop
        part := format('%s_%s', t, to_char(m, 'YYYY_MM'));
        if to_regclass(format('validic_partitions.%I', part)) is null then
          lo := to_char(m, 'YYYY-MM-DD') || ' 00:00:00+00';
          hi := to_char(m + interval '1 month', 'YYYY-MM-DD') || ' 00:00:00+00';
          -- Created apart and ATTACHed: ATTACH takes only SHARE UPDATE EXCLUSIVE on the parent, so loads
          -- and analysts' queries go on (CREATE … PARTITION OF would lock the whole table). The CHECK
          -- spares ATTACH a scan; the undated partition's own CHECK spares it that one.
          execute format('create table validic_partitions.%I (like validic.%I including defaults including constraints
                          including storage including compression)', part, t);
          execute format('alter table validic_partitions.%I add constraint %I check (start_time >= %L and start_time < %L)',
            part, part || '_month', lo, hi);
          execute format('alter table validic.%I attach partition validic_partitions.%I for values from (%L) to (%L)',
            t, part, lo, hi);
          execute format('alter table validic_partitions.%I drop constraint %I', part, part || '_month');
          created := created + 1;
        end if;
      end loop;
      m := (m + interval '1 month')::date;
    end loop;
    return created;
  end $fn$`;

/**
 * Retention: empties `raw` in one block range of one month's partition of records (one call, one short
 * transaction; the job walks a month's blocks, so no statement rewrites a whole month at once). Only
 * the loader may call it, and only on a partition of validic.records.
 */
const EMPTY_RAW = `create or replace function validic_sync.empty_raw(part regclass, first_block bigint, blocks bigint)
  returns bigint language plpgsql security definer set search_path = pg_catalog, pg_temp as $fn$
  declare emptied bigint;
  begin
    if not exists (select 1 from pg_inherits where inhrelid = part and inhparent = 'validic.records'::regclass) then
      raise exception '% is not a partition of validic.records', part;
    end if;
    execute format('update %s set raw = null, raw_emptied_at = now()
                    where ctid >= %L::tid and ctid < %L::tid and raw is not null',
                   part, format('(%s,0)', first_block), format('(%s,0)', first_block + blocks));
    get diagnostics emptied = row_count;
    return emptied;
  end $fn$`;

/** The series of one record as intraday_series rows (an inlined SQL function: views and queries share it). */
const SERIES_OF = `create or replace function validic.series_of(series jsonb, deltas bigint[], point_values double precision[])
  returns table (metric_index integer, metric_type text, unit text, origin text, "time" timestamptz[],
                 value double precision[], bad_points integer)
  language sql immutable parallel safe as $fn$
  select (s.e->>0)::integer, s.e->>1, s.e->>2, s.e->>3,
         t.times[s.first + 1 : s.first + (s.e->>5)::integer],
         coalesce(point_values[s.first + 1 : s.first + (s.e->>5)::integer], '{}'),
         (s.e->>4)::integer
  from (select array(select to_timestamp(sum(p.d) over (order by p.o) / 1000.0)
                     from unnest(deltas) with ordinality as p(d, o) order by p.o) as times) t,
       (select x.e, coalesce(sum((x.e->>5)::integer) over (order by x.k rows between unbounded preceding and 1 preceding), 0)::integer as first
        from jsonb_array_elements(series) with ordinality as x(e, k)) s
$fn$`;

interface ViewSpec {
  name: string;
  comment: string;
  select: string;
  columns: [name: string, comment: string][];
}

/** The record's start_time, which every view of nested parts gives so that joins to records prune. */
const START_TIME_COLUMN: [string, string] = [
  'start_time',
  "The record's start_time: the month partition it lives in. Join on it as well as on record_id to read only that month's partition.",
];

const metricColumns: [string, string][] = [
  ['metric_index', 'Position of the metric in its metrics array (0-based).'],
  ['type', 'Metric kind, an open vocabulary (e.g. body_weight, systolic, energy_consumed, steps).'],
  ['origin', 'device (generated by the device), manual (entered by the user) or unknown.'],
  ['unit', 'Unit of value as given by the platform (e.g. kg, mmHg, kcal).'],
  ['value', 'Metric value in unit.'],
];
const metricSelect = (m: string) =>
  `(${m}->>0)::integer as metric_index, ${m}->>1 as type, ${m}->>2 as origin, ${m}->>3 as unit, (${m}->>4)::double precision as value`;

/** `timestamptz` shifted by the record's offset, as a local date (0003). */
const localDate = (time: string, offset: string) =>
  `((${time} at time zone 'UTC') + make_interval(secs => coalesce(${offset}, 0)))::date`;

const views: ViewSpec[] = [
  {
    name: 'record_metrics',
    comment:
      'Metrics of the current version of measurement, nutrition (record level), summary, workout, sleep and other records; one row per metric (a view over records.metrics).',
    select: `select r.org_id, r.id as record_id, r.start_time, ${metricSelect('m')}
      from validic.records r cross join lateral jsonb_array_elements(r.metrics) as m`,
    columns: [
      ['org_id', 'Validic organization id the row belongs to.'],
      ['record_id', 'records.id of the record this metric belongs to.'],
      START_TIME_COLUMN,
      ...metricColumns,
    ],
  },
  {
    name: 'nutrition_segments',
    comment:
      'Segments (finer-grained parts) of nutrition records; one row per segment (a view over records.segments).',
    select: `select r.org_id, r.id as record_id, r.start_time, (s->>0)::integer as segment_index, s->>1 as name
      from validic.records r cross join lateral jsonb_array_elements(r.segments) as s`,
    columns: [
      ['org_id', 'Validic organization id the row belongs to.'],
      ['record_id', 'records.id of the nutrition record.'],
      START_TIME_COLUMN,
      ['segment_index', 'Position of the segment in the record (0-based).'],
      ['name', 'Segment name as given by the source.'],
    ],
  },
  {
    name: 'nutrition_segment_metrics',
    comment: 'Metrics of nutrition segments; one row per metric (a view over records.segments).',
    select: `select r.org_id, r.id as record_id, r.start_time, (s->>0)::integer as segment_index, ${metricSelect('m')}
      from validic.records r cross join lateral jsonb_array_elements(r.segments) as s
      cross join lateral jsonb_array_elements(s->2) as m`,
    columns: [
      ['org_id', 'Validic organization id the row belongs to.'],
      ['record_id', 'records.id of the nutrition record.'],
      START_TIME_COLUMN,
      ['segment_index', 'nutrition_segments.segment_index of the segment.'],
      ...metricColumns,
    ],
  },
  {
    name: 'nutrition_food',
    comment: 'Food items of nutrition segments; one row per food item (a view over records.segments).',
    select: `select r.org_id, r.id as record_id, r.start_time, (s->>0)::integer as segment_index, (f->>0)::integer as food_index,
        f->>1 as name, f->>2 as brand, (f->>3)::double precision as serving_amount, f->>4 as serving_unit_name
      from validic.records r cross join lateral jsonb_array_elements(r.segments) as s
      cross join lateral jsonb_array_elements(s->3) as f`,
    columns: [
      ['org_id', 'Validic organization id the row belongs to.'],
      ['record_id', 'records.id of the nutrition record.'],
      START_TIME_COLUMN,
      ['segment_index', 'nutrition_segments.segment_index of the segment.'],
      ['food_index', 'Position of the food item in the segment (0-based).'],
      ['name', 'Food name.'],
      ['brand', 'Food brand (may be empty).'],
      ['serving_amount', 'Serving size amount (serving.amount).'],
      ['serving_unit_name', 'Serving size unit (serving.unit_name).'],
    ],
  },
  {
    name: 'nutrition_food_metrics',
    comment: 'Metrics of nutrition food items; one row per metric (a view over records.segments).',
    select: `select r.org_id, r.id as record_id, r.start_time, (s->>0)::integer as segment_index, (f->>0)::integer as food_index,
        ${metricSelect('m')}
      from validic.records r cross join lateral jsonb_array_elements(r.segments) as s
      cross join lateral jsonb_array_elements(s->3) as f
      cross join lateral jsonb_array_elements(f->5) as m`,
    columns: [
      ['org_id', 'Validic organization id the row belongs to.'],
      ['record_id', 'records.id of the nutrition record.'],
      START_TIME_COLUMN,
      ['segment_index', 'nutrition_segments.segment_index of the segment.'],
      ['food_index', 'nutrition_food.food_index of the food item.'],
      ...metricColumns,
    ],
  },
  {
    name: 'intraday_series',
    comment:
      'Intraday and CGM time series, one row per (record, metric) with parallel time[] and value[] arrays (a view over the series columns of records). Query intraday_points for one row per point.',
    select: `select r.org_id, r.id as record_id, r.start_time, s.metric_index, s.metric_type, s.unit, s.origin, s.time, s.value, s.bad_points
      from validic.records r
      cross join lateral validic.series_of(r.series, r.series_time_deltas, r.series_values) as s
      where r.series is not null`,
    columns: [
      ['org_id', 'Validic organization id the row belongs to.'],
      ['record_id', 'records.id of the intraday record.'],
      START_TIME_COLUMN,
      ['metric_index', 'Position of the metric in the record (0-based).'],
      ['metric_type', 'Metric kind, e.g. steps, distance, blood_glucose.'],
      ['unit', 'Unit of the values.'],
      ['origin', 'device, manual or unknown.'],
      ['time', 'Point times (UTC), parallel to value.'],
      ['value', 'Point values, parallel to time.'],
      [
        'bad_points',
        'Points of this metric left out because they were not usable (not an object, no valid time, or a value that is not a finite number); raw keeps every point, and an informational quarantine entry (kind bad_points) names them.',
      ],
    ],
  },
  {
    name: 'intraday_points',
    comment: 'One row per intraday point (unnests intraday_series).',
    select: `select s.org_id, s.record_id, s.metric_type, s.unit, s.origin, p.time, p.value
      from validic.intraday_series s cross join lateral unnest(s.time, s.value) as p(time, value)`,
    columns: [
      ['org_id', 'Validic organization id.'],
      ['record_id', 'records.id of the intraday record.'],
      ['metric_type', 'Metric kind, e.g. steps, distance, blood_glucose.'],
      ['unit', 'Unit of value.'],
      ['origin', 'device, manual or unknown.'],
      ['time', 'Time of the point (UTC).'],
      ['value', 'Value of the point.'],
    ],
  },
  {
    name: 'daily_intraday_totals',
    comment:
      "Intraday points summed per user, local date and metric (e.g. steps per day), from current, not deleted intraday records. The local date uses each record's utc_offset.",
    select: `select r.org_id, r.uid, ${localDate('p.time', 'r.utc_offset')} as local_date, s.metric_type, s.unit,
        sum(p.value) as total, count(*)::int as points
      from validic.records r
      cross join lateral validic.series_of(r.series, r.series_time_deltas, r.series_values) as s
      cross join lateral unnest(s.time, s.value) as p(time, value)
      where r.series is not null and r.deleted_at is null
      group by r.org_id, r.uid, 3, s.metric_type, s.unit`,
    columns: [
      ['org_id', 'Validic organization id.'],
      ['uid', 'Customer user id.'],
      ['local_date', "The user's local calendar date of the points (UTC time + the record's utc_offset)."],
      ['metric_type', 'Metric kind, e.g. steps, distance, blood_glucose.'],
      ['unit', 'Unit of total.'],
      ['total', 'Sum of the point values of that day.'],
      ['points', 'Number of points summed.'],
    ],
  },
  {
    name: 'daily_metrics',
    comment:
      'Record-level metrics (measurement, nutrition, summary, workout, sleep, …) aggregated per user, local date, record type and metric, from current, not deleted records.',
    select: `select r.org_id, r.uid, ${localDate('r.start_time', 'r.utc_offset')} as local_date, r.type as record_type,
        m->>1 as metric_type, m->>3 as unit, sum((m->>4)::double precision) as total,
        avg((m->>4)::double precision) as average, min((m->>4)::double precision) as minimum,
        max((m->>4)::double precision) as maximum, count(*)::int as readings
      from validic.records r cross join lateral jsonb_array_elements(r.metrics) as m
      where r.deleted_at is null
      group by r.org_id, r.uid, 3, r.type, m->>1, m->>3`,
    columns: [
      ['org_id', 'Validic organization id.'],
      ['uid', 'Customer user id.'],
      ['local_date', "The user's local calendar date of the record start (start_time + utc_offset)."],
      ['record_type', 'Record type: measurement, nutrition, summary, workout, sleep, …'],
      ['metric_type', 'Metric kind, e.g. steps, systolic, energy_consumed.'],
      ['unit', 'Unit of the values.'],
      ['total', 'Sum of the values that day.'],
      ['average', 'Mean of the values that day.'],
      ['minimum', 'Smallest value that day.'],
      ['maximum', 'Largest value that day.'],
      ['readings', 'Number of values.'],
    ],
  },
  {
    name: 'latest_blood_pressure',
    comment:
      'The most recent blood-pressure measurement (a current, not deleted measurement with systolic and diastolic metrics) of every user.',
    select: `select distinct on (r.org_id, r.uid) r.org_id, r.uid, r.id as record_id, r.start_time as measured_at,
        r.start_time + make_interval(secs => coalesce(r.utc_offset, 0)) as measured_at_local,
        sys.value as systolic, dia.value as diastolic, pulse.value as pulse, sys.unit, r.source_type
      from validic.records r
      cross join lateral (select (m->>4)::double precision as value, m->>3 as unit
                          from jsonb_array_elements(r.metrics) as m where m->>1 = 'systolic' limit 1) as sys
      cross join lateral (select (m->>4)::double precision as value
                          from jsonb_array_elements(r.metrics) as m where m->>1 = 'diastolic' limit 1) as dia
      left join lateral (select (m->>4)::double precision as value
                         from jsonb_array_elements(r.metrics) as m where m->>1 = 'pulse' limit 1) as pulse on true
      where r.type = 'measurement' and r.deleted_at is null
      order by r.org_id, r.uid, r.start_time desc, r.id`,
    columns: [
      ['org_id', 'Validic organization id.'],
      ['uid', 'Customer user id.'],
      ['record_id', 'records.id of the measurement.'],
      ['measured_at', 'When the measurement was taken (UTC).'],
      ['measured_at_local', "The same moment as the user's local wall-clock time (timestamp without zone)."],
      ['systolic', 'Systolic pressure.'],
      ['diastolic', 'Diastolic pressure.'],
      ['pulse', 'Pulse taken with the measurement, when present.'],
      ['unit', 'Unit of the pressures (e.g. mmHg).'],
      ['source_type', 'Source of the measurement.'],
    ],
  },
  {
    name: 'data_freshness',
    comment:
      'How current the warehouse is, per organization, record type and source: newest platform processing time, newest arrival, and the lag between them.',
    select: `select org_id, type as record_type, source_type, count(*)::int as records,
        max(created_at) as newest_created_at, max(updated_at) as newest_written_at,
        now() - max(created_at) as age_of_newest
      from validic.records
      group by org_id, type, source_type`,
    columns: [
      ['org_id', 'Validic organization id.'],
      ['record_type', 'Record type.'],
      ['source_type', 'Source of the records.'],
      ['records', 'Records stored (current versions, deleted ones included).'],
      ['newest_created_at', 'Newest platform processing time (created_at) among them.'],
      ['newest_written_at', 'When the warehouse last wrote one of them.'],
      ['age_of_newest', 'now() − newest_created_at: how old the newest data is.'],
    ],
  },
];

/** Views that read the tables this migration replaces, dropped first and recreated last (both ways). */
const DEPENDENT_VIEWS = [
  'data_freshness',
  'latest_blood_pressure',
  'daily_metrics',
  'daily_intraday_totals',
  'intraday_points',
];
const CHILD_TABLES = [
  'record_metrics',
  'nutrition_food_metrics',
  'nutrition_food',
  'nutrition_segment_metrics',
  'nutrition_segments',
  'intraday_series',
];

/** The normalized columns of one old record, built from its old child tables (alias r). */
const METRICS_FROM_TABLES = `(select jsonb_agg(jsonb_build_array(m.metric_index, m.type, m.origin, m.unit, m.value) order by m.metric_index)
   from validic.record_metrics m where m.org_id = r.org_id and m.record_id = r.id)`;
const SEGMENTS_FROM_TABLES = `(select jsonb_agg(jsonb_build_array(s.segment_index, s.name,
     coalesce((select jsonb_agg(jsonb_build_array(m.metric_index, m.type, m.origin, m.unit, m.value) order by m.metric_index)
               from validic.nutrition_segment_metrics m
               where m.org_id = s.org_id and m.record_id = s.record_id and m.segment_index = s.segment_index), '[]'),
     coalesce((select jsonb_agg(jsonb_build_array(f.food_index, f.name, f.brand, f.serving_amount, f.serving_unit_name,
                 coalesce((select jsonb_agg(jsonb_build_array(m.metric_index, m.type, m.origin, m.unit, m.value) order by m.metric_index)
                           from validic.nutrition_food_metrics m
                           where m.org_id = f.org_id and m.record_id = f.record_id and m.segment_index = f.segment_index
                             and m.food_index = f.food_index), '[]')) order by f.food_index)
               from validic.nutrition_food f
               where f.org_id = s.org_id and f.record_id = s.record_id and f.segment_index = s.segment_index), '[]'))
     order by s.segment_index)
   from validic.nutrition_segments s where s.org_id = r.org_id and s.record_id = r.id)`;
const SERIES_FROM_TABLES = `(select jsonb_agg(jsonb_build_array(s.metric_index, s.metric_type, s.unit, s.origin, s.bad_points, cardinality(s.time))
     order by s.metric_index)
   from validic.intraday_series s where s.org_id = r.org_id and s.record_id = r.id)`;
const POINTS_FROM_TABLES = `(select array_agg(x.ms - coalesce(x.previous, 0) order by x.k)
   from (select p.ms, lag(p.ms) over (order by p.mi, p.o) as previous, row_number() over (order by p.mi, p.o) as k
         from (select s.metric_index as mi, t.o, (extract(epoch from t.t) * 1000)::bigint as ms
               from validic.intraday_series s cross join lateral unnest(s.time) with ordinality as t(t, o)
               where s.org_id = r.org_id and s.record_id = r.id) as p) as x)`;
const VALUES_FROM_TABLES = `(select array_agg(p.v order by s.metric_index, p.o)
   from validic.intraday_series s cross join lateral unnest(s.value) with ordinality as p(v, o)
   where s.org_id = r.org_id and s.record_id = r.id)`;

const OLD_RECORD_COLUMNS = `org_id, id, type, version, checksum, uid, user_id, source_type, source_device, log_id, start_time,
  end_time, utc_offset, offset_origin, created_at, deleted_at, tags, user_notes, name, category, granularity_interval,
  granularity_unit, raw, arrived_via, ingested_at, updated_at`;

async function run(db: Kysely<any>, statements: string[]) {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

function viewStatements(view: ViewSpec): string[] {
  return [
    `create view validic.${view.name} as ${view.select}`,
    `comment on view validic.${view.name} is ${quote(view.comment)}`,
    ...view.columns.map(
      ([column, comment]) => `comment on column validic.${view.name}.${column} is ${quote(comment)}`,
    ),
    `grant select on validic.${view.name} to validic_analyst`,
  ];
}

export async function up(db: Kysely<any>): Promise<void> {
  await run(db, [
    // Casts of timestamps in this migration read UTC, whatever the server's setting.
    `set local time zone 'UTC'`,
    ...DEPENDENT_VIEWS.map((v) => `drop view if exists validic.${v}`),
    'create schema validic_partitions',
    'alter schema validic_partitions owner to validic_owner',
    `comment on schema validic_partitions is ${quote('Monthly partitions of validic.records and validic.record_versions. Query the parent tables; an old month can be detached or dropped here (docs/warehouse.md).')}`,

    // records
    'alter table validic.records rename to records_unpartitioned',
    'alter table validic.records_unpartitioned rename constraint records_arrived_via_check to records_unpartitioned_arrived_via_check',
    'alter index validic.records_user_start_idx rename to records_unpartitioned_user_start_idx',
    'alter index validic.records_created_idx rename to records_unpartitioned_created_idx',
    `create table validic.records (like validic.records_unpartitioned including defaults including constraints
       including comments including compression) partition by range (start_time)`,
    `comment on table validic.records is ${quote('Current version of every v2 record of any resource type (measurement, nutrition, intraday, summary, workout, sleep, cgm and types not modelled yet); one row per (org_id, id). Partitioned by month of start_time (schema validic_partitions). Earlier versions are in record_versions.')}`,
    ...NEW_RECORD_COLUMNS.flatMap(([name, type, comment]) => [
      `alter table validic.records add column ${name} ${type}`,
      `comment on column validic.records.${name} is ${quote(comment)}`,
    ]),
    'alter table validic.records alter column raw drop not null',
    `comment on column validic.records.raw is ${quote(RAW_COMMENT)}`,
    `comment on column validic.records.start_time is ${quote('Start of the measured period (UTC); the month partition the row lives in.')}`,
    // Serves the loader's probe by (org_id, id) and keeps a record unique within its month.
    'create unique index records_key on validic.records (org_id, id, start_time) nulls not distinct',
    // One user's records over time: the analysts' most common bound and the recent poll's check. Led by
    // uid, not org_id: most warehouses hold one org, and analysts filter on uid alone, which an index
    // led by org_id cannot jump into (no skip scan before PostgreSQL 18).
    'create index records_user_start_idx on validic.records (uid, start_time)',
    // What arrived (was processed) since: freshness and incremental exports.
    'create index records_created_idx on validic.records (org_id, created_at)',
    `create table validic_partitions.records_undated partition of validic.records default`,
    'alter table validic_partitions.records_undated add constraint records_undated_only check (start_time is null)',

    // record_versions
    'alter table validic.record_versions rename to record_versions_unpartitioned',
    'alter table validic.record_versions_unpartitioned rename constraint record_versions_arrived_via_check to record_versions_unpartitioned_arrived_via_check',
    `create table validic.record_versions (like validic.record_versions_unpartitioned including defaults
       including constraints including comments including compression, start_time timestamptz)
       partition by range (start_time)`,
    `comment on table validic.record_versions is ${quote('Versions of records that are not (or no longer) current: every distinct (id, checksum) seen except the one in records. Partitioned by month of start_time.')}`,
    `comment on column validic.record_versions.start_time is ${quote("This version's start_time (UTC); the month partition the row lives in.")}`,
    'create unique index record_versions_key on validic.record_versions (org_id, record_id, checksum, start_time) nulls not distinct',
    `create table validic_partitions.record_versions_undated partition of validic.record_versions default`,
    'alter table validic_partitions.record_versions_undated add constraint record_versions_undated_only check (start_time is null)',

    'alter table validic.records owner to validic_owner',
    'alter table validic.record_versions owner to validic_owner',
    'alter table validic_partitions.records_undated owner to validic_owner',
    'alter table validic_partitions.record_versions_undated owner to validic_owner',
    'grant select, insert, update, delete on validic.records, validic.record_versions to validic_loader',
    'grant select on validic.records, validic.record_versions to validic_analyst',

    'alter table validic.record_versions alter column raw drop not null',
    `comment on column validic.record_versions.raw is ${quote('This version exactly as received; null when it replaced a current version whose raw the retention setting had emptied.')}`,
    EMPTY_RAW,
    'alter function validic_sync.empty_raw(regclass, bigint, bigint) owner to validic_owner',
    'revoke all on function validic_sync.empty_raw(regclass, bigint, bigint) from public',
    'grant execute on function validic_sync.empty_raw(regclass, bigint, bigint) to validic_loader',
    CREATE_PARTITIONS,
    'alter function validic_sync.create_month_partitions(date, date) owner to validic_owner',
    'revoke all on function validic_sync.create_month_partitions(date, date) from public',
    'grant execute on function validic_sync.create_month_partitions(date, date) to validic_loader',
    // Every month the existing rows need, and this month and the next two.
    `select validic_sync.create_month_partitions(
       least((select min(start_time) from validic.records_unpartitioned), (select min((raw->>'start_time')::timestamptz)
              from validic.record_versions_unpartitioned), now())::date,
       greatest((select max(start_time) from validic.records_unpartitioned), (select max((raw->>'start_time')::timestamptz)
              from validic.record_versions_unpartitioned), now() + interval '2 months')::date)`,

    `insert into validic.records (${OLD_RECORD_COLUMNS}, metrics, segments, series, series_time_deltas, series_values)
     select ${OLD_RECORD_COLUMNS.replaceAll(/(\w+)/g, 'r.$1')}, ${METRICS_FROM_TABLES}, ${SEGMENTS_FROM_TABLES},
       ${SERIES_FROM_TABLES}, ${POINTS_FROM_TABLES}, ${VALUES_FROM_TABLES}
     from validic.records_unpartitioned r`,
    `insert into validic.record_versions (org_id, record_id, checksum, type, created_at, deleted_at, raw, arrived_via,
       archived_at, start_time)
     select org_id, record_id, checksum, type, created_at, deleted_at, raw, arrived_via, archived_at,
       (raw->>'start_time')::timestamptz
     from validic.record_versions_unpartitioned`,
    ...CHILD_TABLES.map((t) => `drop table validic.${t}`),
    'drop table validic.records_unpartitioned',
    'drop table validic.record_versions_unpartitioned',

    SERIES_OF,
    'alter function validic.series_of(jsonb, bigint[], double precision[]) owner to validic_owner',
    `comment on function validic.series_of(jsonb, bigint[], double precision[]) is ${quote('The series of one record (records.series, series_time_deltas, series_values) as intraday_series rows; for queries that start from records.')}`,
    ...views.flatMap(viewStatements),
    ...views.map((v) => `alter view validic.${v.name} owner to validic_owner`),
    'select validic_sync.refresh_row_level_security()',
  ]);
}

/** 0003's definitions of the views that read the child tables, for `down`. */
const OLD_VIEWS = [
  `create view validic.daily_intraday_totals as select s.org_id, r.uid, ${localDate('p.time', 'r.utc_offset')} as local_date,
      s.metric_type, s.unit, sum(p.value) as total, count(*)::int as points
    from validic.intraday_series s
    join validic.records r on r.org_id = s.org_id and r.id = s.record_id and r.deleted_at is null
    cross join lateral unnest(s.time, s.value) as p(time, value)
    group by s.org_id, r.uid, 3, s.metric_type, s.unit`,
  `create view validic.daily_metrics as select r.org_id, r.uid, ${localDate('r.start_time', 'r.utc_offset')} as local_date,
      r.type as record_type, m.type as metric_type, m.unit, sum(m.value) as total, avg(m.value) as average,
      min(m.value) as minimum, max(m.value) as maximum, count(*)::int as readings
    from validic.records r
    join validic.record_metrics m on m.org_id = r.org_id and m.record_id = r.id
    where r.deleted_at is null
    group by r.org_id, r.uid, 3, r.type, m.type, m.unit`,
  `create view validic.latest_blood_pressure as
    select distinct on (r.org_id, r.uid) r.org_id, r.uid, r.id as record_id, r.start_time as measured_at,
      r.start_time + make_interval(secs => coalesce(r.utc_offset, 0)) as measured_at_local,
      sys.value as systolic, dia.value as diastolic, pulse.value as pulse, sys.unit, r.source_type
    from validic.records r
    join validic.record_metrics sys on sys.org_id = r.org_id and sys.record_id = r.id and sys.type = 'systolic'
    join validic.record_metrics dia on dia.org_id = r.org_id and dia.record_id = r.id and dia.type = 'diastolic'
    left join validic.record_metrics pulse on pulse.org_id = r.org_id and pulse.record_id = r.id and pulse.type = 'pulse'
    where r.type = 'measurement' and r.deleted_at is null
    order by r.org_id, r.uid, r.start_time desc, r.id`,
];

/** The old child tables (0001's shape) and the old unpartitioned tables, filled back from the new columns. */
export async function down(db: Kysely<any>): Promise<void> {
  const metricCols =
    'metric_index integer not null, type text not null, origin text, unit text, value double precision';
  const metricOf = (m: string) =>
    `(${m}->>0)::integer, ${m}->>1, ${m}->>2, ${m}->>3, (${m}->>4)::double precision`;
  await run(db, [
    `set local time zone 'UTC'`,
    ...[...views].reverse().map((v) => `drop view if exists validic.${v.name}`),
    'drop function validic.series_of(jsonb, bigint[], double precision[])',
    'alter table validic.records rename to records_partitioned',
    'alter table validic.record_versions rename to record_versions_partitioned',
    `create table validic.records (like validic.records_partitioned including defaults including comments including compression)`,
    ...NEW_RECORD_COLUMNS.map(([name]) => `alter table validic.records drop column ${name}`),
    `insert into validic.records select ${OLD_RECORD_COLUMNS.replace('raw,', "coalesce(raw, '{}'::jsonb),")}
       from validic.records_partitioned`,
    'alter table validic.records alter column raw set not null',
    'alter table validic.records add primary key (org_id, id)',
    `alter table validic.records add constraint records_arrived_via_check check (arrived_via in ('poll','stream','replay','legacy','push'))`,
    'drop index if exists validic.records_user_start_idx',
    'drop index if exists validic.records_created_idx',
    `create table validic.record_metrics (org_id text not null, record_id text not null, ${metricCols},
       primary key (org_id, record_id, metric_index))`,
    `insert into validic.record_metrics select r.org_id, r.id, ${metricOf('m')}
       from validic.records_partitioned r cross join lateral jsonb_array_elements(r.metrics) m`,
    `create table validic.nutrition_segments (org_id text not null, record_id text not null, segment_index integer not null,
       name text, primary key (org_id, record_id, segment_index))`,
    `insert into validic.nutrition_segments select r.org_id, r.id, (s->>0)::integer, s->>1
       from validic.records_partitioned r cross join lateral jsonb_array_elements(r.segments) s`,
    `create table validic.nutrition_segment_metrics (org_id text not null, record_id text not null,
       segment_index integer not null, ${metricCols}, primary key (org_id, record_id, segment_index, metric_index))`,
    `insert into validic.nutrition_segment_metrics select r.org_id, r.id, (s->>0)::integer, ${metricOf('m')}
       from validic.records_partitioned r cross join lateral jsonb_array_elements(r.segments) s
       cross join lateral jsonb_array_elements(s->2) m`,
    `create table validic.nutrition_food (org_id text not null, record_id text not null, segment_index integer not null,
       food_index integer not null, name text, brand text, serving_amount double precision, serving_unit_name text,
       primary key (org_id, record_id, segment_index, food_index))`,
    `insert into validic.nutrition_food select r.org_id, r.id, (s->>0)::integer, (f->>0)::integer, f->>1, f->>2,
       (f->>3)::double precision, f->>4
       from validic.records_partitioned r cross join lateral jsonb_array_elements(r.segments) s
       cross join lateral jsonb_array_elements(s->3) f`,
    `create table validic.nutrition_food_metrics (org_id text not null, record_id text not null,
       segment_index integer not null, food_index integer not null, ${metricCols},
       primary key (org_id, record_id, segment_index, food_index, metric_index))`,
    `insert into validic.nutrition_food_metrics select r.org_id, r.id, (s->>0)::integer, (f->>0)::integer, ${metricOf('m')}
       from validic.records_partitioned r cross join lateral jsonb_array_elements(r.segments) s
       cross join lateral jsonb_array_elements(s->3) f cross join lateral jsonb_array_elements(f->5) m`,
    SERIES_OF,
    `create table validic.intraday_series (org_id text not null, record_id text not null, metric_index integer not null,
       metric_type text not null, unit text, origin text, time timestamptz[] not null, value double precision[] not null,
       bad_points integer not null default 0 check (bad_points >= 0), primary key (org_id, record_id, metric_index))`,
    `insert into validic.intraday_series select r.org_id, r.id, s.metric_index, s.metric_type, s.unit, s.origin,
       s.time, s.value, s.bad_points
       from validic.records_partitioned r
       cross join lateral validic.series_of(r.series, r.series_time_deltas, r.series_values) s
       where r.series is not null`,
    'drop function validic.series_of(jsonb, bigint[], double precision[])',
    `create table validic.record_versions (like validic.record_versions_partitioned including defaults
       including comments including compression)`,
    'alter table validic.record_versions drop column start_time',
    `insert into validic.record_versions select org_id, record_id, checksum, type, created_at, deleted_at,
       coalesce(raw, '{}'::jsonb), arrived_via, archived_at from validic.record_versions_partitioned`,
    'alter table validic.record_versions alter column raw set not null',
    'alter table validic.record_versions add primary key (org_id, record_id, checksum)',
    `alter table validic.record_versions add constraint record_versions_arrived_via_check check (arrived_via in ('poll','stream','replay','legacy','push'))`,
    'drop table validic.records_partitioned',
    'drop table validic.record_versions_partitioned',
    'drop function validic_sync.create_month_partitions(date, date)',
    'drop function validic_sync.empty_raw(regclass, bigint, bigint)',
    'drop schema validic_partitions cascade',
    'create index records_user_start_idx on validic.records (org_id, uid, start_time)',
    'create index records_type_start_idx on validic.records (org_id, type, start_time)',
    'create index records_created_idx on validic.records (org_id, created_at)',
    'create index record_metrics_type_idx on validic.record_metrics (org_id, type)',
    ...['records', 'record_versions', ...CHILD_TABLES].flatMap((t) => [
      `alter table validic.${t} owner to validic_owner`,
      `grant select, insert, update, delete on validic.${t} to validic_loader`,
      `grant select on validic.${t} to validic_analyst`,
    ]),
    `create view validic.intraday_points as select s.org_id, s.record_id, s.metric_type, s.unit, s.origin, p.time, p.value
       from validic.intraday_series s cross join lateral unnest(s.time, s.value) as p(time, value)`,
    ...views
      .filter((v) => v.name === 'data_freshness')
      .map((v) => `create view validic.${v.name} as ${v.select}`),
    ...OLD_VIEWS,
    ...DEPENDENT_VIEWS.map((v) => `grant select on validic.${v} to validic_analyst`),
    'select validic_sync.refresh_row_level_security()',
  ]);
}
