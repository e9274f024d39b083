/**
 * The example queries of docs/warehouse.md.
 *
 * They live here, not only in the document, so that a test runs every one of them against a warehouse
 * filled from the sandbox: an example that stops working fails CI. bench/query-scaling.ts times them on a
 * small and a large warehouse.
 *
 * Examples bounded to one user or one month are written for the literal user `EXAMPLE_UID` and month
 * `EXAMPLE_MONTH`, as an analyst would type them; the test and the bench put real ones in with
 * `bindExample`. They filter a user on `uid` alone, as an analyst of a warehouse of one organization
 * (most of them) does: the index of a user's records is `(uid, start_time)`, so `uid` alone is served.
 * A uid is unique within its organization only: in a warehouse of several organizations, add
 * `org_id = 'your-org-id'` (`EXAMPLE_ORG_ID`) to the filter. A month is bounded on `start_time`, the
 * column `records` is partitioned by, so PostgreSQL reads only that month's partition.
 */
export interface ExampleQuery {
  /** Short name (benches print it: `query-scaling-<name>`). */
  name: string;
  title: string;
  /** What the query answers and anything to know when adapting it. */
  description: string;
  sql: string;
  /**
   * What bounds the rows the query reads: one user (all of their data, every month), one month (of
   * the whole warehouse), or both. Absent: the query reads the whole warehouse.
   */
  bound?: 'user' | 'month' | 'user and month';
}

/** The organization to add to a bounded example in a warehouse of several organizations. */
export const EXAMPLE_ORG_ID = 'your-org-id';
/** The user id the bounded examples are written for (replace it with one of yours). */
export const EXAMPLE_UID = 'uid-3f9c2a71d0e4';
/** The first day of the month the bounded examples are written for. */
export const EXAMPLE_MONTH = '2026-03-01';

const quoted = (value: string) => `'${value.replaceAll("'", "''")}'`;

/** The example's SQL for another organization, user and month (`month`: its first day, `YYYY-MM-01`). */
export function bindExample(
  query: ExampleQuery,
  values: { orgId: string; uid: string; month: string },
): string {
  return query.sql
    .replaceAll(quoted(EXAMPLE_ORG_ID), quoted(values.orgId))
    .replaceAll(quoted(EXAMPLE_UID), quoted(values.uid))
    .replaceAll(quoted(EXAMPLE_MONTH), quoted(values.month));
}

/** A meal's nutrients summed from its record's metrics: the columns of both meal examples. */
const MEAL_NUTRIENTS = `sum(m.value) filter (where m.type = 'energy_consumed') as energy_kcal,
       sum(m.value) filter (where m.type = 'carbohydrate') as carbohydrate,
       sum(m.value) filter (where m.type = 'fat') as fat,
       sum(m.value) filter (where m.type = 'protein') as protein`;

export const EXAMPLE_QUERIES: ExampleQuery[] = [
  {
    name: 'daily-steps',
    title: 'Daily steps per user (local date)',
    description:
      "Intraday step points summed per user and local calendar day, using the `daily_intraday_totals` view (each record's own `utc_offset` decides the day).",
    sql: `select uid, local_date, total as steps
from validic.daily_intraday_totals
where metric_type = 'steps'
order by uid, local_date desc
limit 50;`,
  },
  {
    name: 'bp-weekly',
    title: 'Blood pressure trend per user and week',
    description: 'Weekly averages of systolic and diastolic measurements, from record-level metrics.',
    sql: `select r.uid, date_trunc('week', r.start_time)::date as week,
       round(avg(m.value) filter (where m.type = 'systolic')::numeric, 1) as systolic,
       round(avg(m.value) filter (where m.type = 'diastolic')::numeric, 1) as diastolic,
       count(distinct r.id) as readings
from validic.records r
join validic.record_metrics m on m.org_id = r.org_id and m.record_id = r.id and m.start_time = r.start_time
where r.type = 'measurement' and r.deleted_at is null and m.type in ('systolic', 'diastolic')
group by r.uid, week
order by r.uid, week;`,
  },
  {
    name: 'latest-bp',
    title: 'Latest blood pressure of every user',
    description: 'One row per user from the `latest_blood_pressure` view.',
    sql: `select uid, measured_at, systolic, diastolic, pulse, unit, source_type
from validic.latest_blood_pressure
order by measured_at desc;`,
  },
  {
    name: 'nutrition-meals',
    title: 'Nutrition per meal',
    description:
      'Energy, carbohydrate, fat and protein per nutrition record (meal), with its name and category, newest first.',
    sql: `select r.uid, r.start_time, r.name as meal, r.category,
       ${MEAL_NUTRIENTS}
from validic.records r
join validic.record_metrics m on m.org_id = r.org_id and m.record_id = r.id and m.start_time = r.start_time
where r.type = 'nutrition' and r.deleted_at is null
group by r.org_id, r.id, r.uid, r.start_time, r.name, r.category
order by r.start_time desc
limit 50;`,
  },
  {
    name: 'foods',
    title: 'Foods eaten most often',
    description: 'Food items of nutrition segments, counted, with their typical serving.',
    sql: `select f.name, nullif(f.brand, '') as brand, count(*) as times,
       round(avg(f.serving_amount)::numeric, 1) as avg_serving, min(f.serving_unit_name) as unit
from validic.nutrition_food f
join validic.records r on r.org_id = f.org_id and r.id = f.record_id and r.deleted_at is null
group by f.name, f.brand
order by times desc
limit 20;`,
  },
  {
    name: 'connection-events',
    title: 'Who connected or disconnected which source',
    description:
      'Connection events of the last 90 days, newest first; `deleted_reason` says why a source was disconnected.',
    sql: `select event_time, uid, source_type, action, deleted_reason
from validic.connection_events
where event_time > now() - interval '90 days'
order by event_time desc
limit 100;`,
  },
  {
    name: 'connected-sources',
    title: 'Sources connected right now, per user',
    description: "A source is connected when the user's latest event for it is a create.",
    sql: `select uid, source_type, event_time as connected_since
from (
  select distinct on (org_id, uid, source_type) uid, source_type, action, event_time
  from validic.connection_events
  order by org_id, uid, source_type, event_time desc, id
) latest
where action = 'create'
order by uid, source_type;`,
  },
  {
    name: 'freshness',
    title: 'Data freshness',
    description:
      'How old the newest data is per record type and source (`data_freshness` view); a growing age means a source or the sync has stalled.',
    sql: `select record_type, source_type, records, newest_created_at, age_of_newest
from validic.data_freshness
order by age_of_newest desc;`,
  },
  {
    name: 'records-per-day',
    title: 'Records per day, type and source',
    description: 'Volume by local day of the record, type and source: the shape of the data at a glance.',
    sql: `select (start_time + make_interval(secs => coalesce(utc_offset, 0)))::date as local_date,
       type, source_type, count(*) as records
from validic.records
where deleted_at is null
group by 1, type, source_type
order by local_date desc, type, source_type
limit 100;`,
  },
  {
    name: 'updated-deleted',
    title: 'Updated and deleted records',
    description:
      'Records the platform changed after first delivery (earlier versions in `record_versions`) and records it marked deleted.',
    sql: `select r.type,
       count(*) filter (where r.deleted_at is not null) as deleted,
       count(distinct v.record_id) as updated,
       count(v.record_id) as earlier_versions_kept
from validic.records r
left join validic.record_versions v on v.org_id = r.org_id and v.record_id = r.id
group by r.type
order by r.type;`,
  },
  {
    name: 'daily-summary',
    title: 'Daily totals of summary metrics',
    description:
      'Steps, calories and other daily summary metrics per user and local date (`daily_metrics` view).',
    sql: `select uid, local_date, metric_type, unit, total
from validic.daily_metrics
where record_type = 'summary'
order by uid, local_date desc, metric_type
limit 100;`,
  },
  {
    name: 'user-daily-steps',
    title: "One user's daily steps in a month",
    description:
      "The daily steps of one user for one month (local dates), summed from the intraday points of their records (`validic.series_of`, what the `daily_intraday_totals` view does for every user). The view cannot be bounded on `start_time`, so a filter on its `local_date` reads every month of the user; here the records are bounded on `start_time` to the month and a day either side (a day's series starts within a day of its local date, whatever the user's time zone), which reads only those months' partitions, and the points on the local dates.",
    sql: `select ((p.time at time zone 'UTC') + make_interval(secs => coalesce(r.utc_offset, 0)))::date as local_date,
       sum(p.value) as steps, count(*)::int as points
from validic.records r
cross join lateral validic.series_of(r.series, r.series_time_deltas, r.series_values) as s
cross join lateral unnest(s.time, s.value) as p(time, value)
where r.uid = '${EXAMPLE_UID}' and r.series is not null and r.deleted_at is null and s.metric_type = 'steps'
  and r.start_time >= date '${EXAMPLE_MONTH}' - interval '1 day'
  and r.start_time < date '${EXAMPLE_MONTH}' + interval '1 month 1 day'
  and ((p.time at time zone 'UTC') + make_interval(secs => coalesce(r.utc_offset, 0)))::date >= date '${EXAMPLE_MONTH}'
  and ((p.time at time zone 'UTC') + make_interval(secs => coalesce(r.utc_offset, 0)))::date < date '${EXAMPLE_MONTH}' + interval '1 month'
group by 1
order by 1;`,
    bound: 'user and month',
  },
  {
    name: 'user-bp-weekly',
    title: "One user's blood pressure per week",
    description:
      'Weekly averages of systolic and diastolic measurements of one user, over all their data (every month: it reads as many partitions as the warehouse has months).',
    sql: `select date_trunc('week', r.start_time)::date as week,
       round(avg(m.value) filter (where m.type = 'systolic')::numeric, 1) as systolic,
       round(avg(m.value) filter (where m.type = 'diastolic')::numeric, 1) as diastolic,
       count(distinct r.id) as readings
from validic.records r
join validic.record_metrics m on m.org_id = r.org_id and m.record_id = r.id and m.start_time = r.start_time
where r.uid = '${EXAMPLE_UID}'
  and r.type = 'measurement' and r.deleted_at is null
  and m.type in ('systolic', 'diastolic')
group by week
order by week;`,
    bound: 'user',
  },
  {
    name: 'user-latest-bp',
    title: "One user's latest blood pressure",
    description: 'The `latest_blood_pressure` view for one user.',
    sql: `select measured_at, measured_at_local, systolic, diastolic, pulse, unit, source_type
from validic.latest_blood_pressure
where uid = '${EXAMPLE_UID}';`,
    bound: 'user',
  },
  {
    name: 'user-month-meals',
    title: "One user's meals in a month",
    description:
      'Energy, carbohydrate, fat and protein of every nutrition record (meal) of one user in one month (UTC start time), in order.',
    sql: `select r.start_time, r.name as meal, r.category,
       ${MEAL_NUTRIENTS}
from validic.records r
join validic.record_metrics m on m.org_id = r.org_id and m.record_id = r.id and m.start_time = r.start_time
where r.uid = '${EXAMPLE_UID}'
  and r.type = 'nutrition' and r.deleted_at is null
  and r.start_time >= date '${EXAMPLE_MONTH}' and r.start_time < date '${EXAMPLE_MONTH}' + interval '1 month'
group by r.org_id, r.id, r.start_time, r.name, r.category
order by r.start_time;`,
    bound: 'user and month',
  },
  {
    name: 'month-records-by-type',
    title: 'Records of a month per type and source',
    description:
      "The warehouse's records of one month (UTC start time: that month's partition only) counted per type and source, with how many were deleted.",
    sql: `select type, source_type, count(*) as records,
       count(*) filter (where deleted_at is not null) as deleted
from validic.records
where start_time >= date '${EXAMPLE_MONTH}' and start_time < date '${EXAMPLE_MONTH}' + interval '1 month'
group by type, source_type
order by type, source_type;`,
    bound: 'month',
  },
];
