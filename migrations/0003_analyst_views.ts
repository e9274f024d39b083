/**
 * 0003: views for the questions analysts ask first (docs/warehouse.md has the example queries that use
 * them). Local dates come from each record's own `utc_offset` (seconds), which is what the user's
 * device or profile said at the time, rather than the user's current time zone.
 *
 * Frozen in time: never imports application code.
 */
import { type Kysely, sql } from 'kysely';

interface ViewSpec {
  name: string;
  comment: string;
  select: string;
  columns: [name: string, comment: string][];
}

/** `timestamptz` shifted by the record's offset, as a local date. */
const localDate = (time: string, offset: string) =>
  `((${time} at time zone 'UTC') + make_interval(secs => coalesce(${offset}, 0)))::date`;

const views: ViewSpec[] = [
  {
    name: 'daily_intraday_totals',
    comment:
      "Intraday points summed per user, local date and metric (e.g. steps per day), from current, not deleted intraday records. The local date uses each record's utc_offset.",
    select: `select s.org_id, r.uid, ${localDate('p.time', 'r.utc_offset')} as local_date, s.metric_type, s.unit,
        sum(p.value) as total, count(*)::int as points
      from validic.intraday_series s
      join validic.records r on r.org_id = s.org_id and r.id = s.record_id and r.deleted_at is null
      cross join lateral unnest(s.time, s.value) as p(time, value)
      group by s.org_id, r.uid, 3, s.metric_type, s.unit`,
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
        m.type as metric_type, m.unit, sum(m.value) as total, avg(m.value) as average, min(m.value) as minimum,
        max(m.value) as maximum, count(*)::int as readings
      from validic.records r
      join validic.record_metrics m on m.org_id = r.org_id and m.record_id = r.id
      where r.deleted_at is null
      group by r.org_id, r.uid, 3, r.type, m.type, m.unit`,
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
      join validic.record_metrics sys on sys.org_id = r.org_id and sys.record_id = r.id and sys.type = 'systolic'
      join validic.record_metrics dia on dia.org_id = r.org_id and dia.record_id = r.id and dia.type = 'diastolic'
      left join validic.record_metrics pulse on pulse.org_id = r.org_id and pulse.record_id = r.id and pulse.type = 'pulse'
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

export async function up(db: Kysely<any>): Promise<void> {
  for (const view of views) {
    await sql.raw(`create or replace view validic.${view.name} as ${view.select}`).execute(db);
    await sql.raw(`comment on view validic.${view.name} is ${quote(view.comment)}`).execute(db);
    for (const [column, comment] of view.columns) {
      await sql.raw(`comment on column validic.${view.name}.${column} is ${quote(comment)}`).execute(db);
    }
  }
  // 0001's default privileges already cover views the same role creates later; the explicit grant also
  // covers a migration run by another role than 0001's.
  await sql
    .raw(`grant select on ${views.map((v) => `validic.${v.name}`).join(', ')} to validic_analyst`)
    .execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const view of [...views].reverse())
    await sql.raw(`drop view if exists validic.${view.name}`).execute(db);
}

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
