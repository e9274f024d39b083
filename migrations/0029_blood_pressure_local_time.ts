/**
 * 0029: `latest_blood_pressure.measured_at_local` is the user's local wall-clock time, a `timestamp`
 * without time zone, as its comment always said. It was `start_time + utc_offset` as a `timestamptz`:
 * the right instant shifted, which every session then showed in its own zone (a 07:30Z reading at −8 h
 * showed as 18:30−05 in a New York session, where the user's clock said 23:30). Now it is the UTC
 * wall time of start_time plus the offset: 23:30, whatever the session's zone.
 *
 * A view's column cannot change type in place: the view is created again, with its comments, owner and
 * grant, and row-level security's options refreshed (validic_sync.refresh_row_level_security, 0006).
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const viewOf = (measuredAtLocal: string) => `create view validic.latest_blood_pressure as
  select distinct on (r.org_id, r.uid) r.org_id, r.uid, r.id as record_id, r.start_time as measured_at,
    ${measuredAtLocal} as measured_at_local,
    sys.value as systolic, dia.value as diastolic, pulse.value as pulse, sys.unit, r.source_type
  from validic.records r
  cross join lateral (select (m->>4)::double precision as value, m->>3 as unit
                      from jsonb_array_elements(r.metrics) as m where m->>1 = 'systolic' limit 1) as sys
  cross join lateral (select (m->>4)::double precision as value
                      from jsonb_array_elements(r.metrics) as m where m->>1 = 'diastolic' limit 1) as dia
  left join lateral (select (m->>4)::double precision as value
                     from jsonb_array_elements(r.metrics) as m where m->>1 = 'pulse' limit 1) as pulse on true
  where r.type = 'measurement' and r.deleted_at is null
  order by r.org_id, r.uid, r.start_time desc, r.id`;

const LOCAL = `(r.start_time at time zone 'UTC') + make_interval(secs => coalesce(r.utc_offset, 0))`;
const SHIFTED_INSTANT = 'r.start_time + make_interval(secs => coalesce(r.utc_offset, 0))';

const COMMENTS: [column: string | null, comment: string][] = [
  [
    null,
    'The most recent blood-pressure measurement (a current, not deleted measurement with systolic and diastolic metrics) of every user.',
  ],
  ['org_id', 'Validic organization id.'],
  ['uid', 'Customer user id.'],
  ['record_id', 'records.id of the measurement.'],
  ['measured_at', 'When the measurement was taken (UTC).'],
  ['systolic', 'Systolic pressure.'],
  ['diastolic', 'Diastolic pressure.'],
  ['pulse', 'Pulse taken with the measurement, when present.'],
  ['unit', 'Unit of the pressures (e.g. mmHg).'],
  ['source_type', 'Source of the measurement.'],
];

const LOCAL_COMMENT =
  "The user's local wall-clock time of the measurement (timestamp without time zone): measured_at in UTC plus the record's utc_offset, the same in every session whatever its time zone.";
const OLD_LOCAL_COMMENT = "The same moment as the user's local wall-clock time (timestamp without zone).";

function statements(measuredAtLocal: string, localComment: string): string[] {
  return [
    'drop view validic.latest_blood_pressure',
    viewOf(measuredAtLocal),
    ...[...COMMENTS, ['measured_at_local', localComment] as [string, string]].map(([column, comment]) =>
      column === null
        ? `comment on view validic.latest_blood_pressure is ${quote(comment)}`
        : `comment on column validic.latest_blood_pressure.${column} is ${quote(comment)}`,
    ),
    'alter view validic.latest_blood_pressure owner to validic_owner',
    'grant select on validic.latest_blood_pressure to validic_analyst',
    'select validic_sync.refresh_row_level_security()',
  ];
}

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements(LOCAL, LOCAL_COMMENT)) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const statement of statements(SHIFTED_INSTANT, OLD_LOCAL_COMMENT))
    await sql.raw(statement).execute(db);
}
