/**
 * 0008: data fidelity (issue 15, items 3 and 4).
 *
 * - `validic.intraday_series.bad_points`: a series point that is null, empty, non-numeric or has no
 *   valid time is left out of time[]/value[] and counted here, instead of the whole record going to
 *   quarantine (one bad point used to hide a whole day). The record's raw keeps every point, and
 *   quarantine holds an informational entry (kind `bad_points`) naming the points.
 *
 * Frozen in time: never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;

const BAD_POINTS_COMMENT =
  'Points of this metric left out of time/value because they were unreadable (null, empty or non-numeric value, missing or invalid time, not an object). The record itself is loaded; raw keeps every point, and validic_sync.quarantine holds an entry of kind bad_points naming them. 0 for a clean series.';

const QUARANTINE_KIND_COMMENT =
  'What the item was meant to be: record, user, connection_event, frame, legacy:<object>, unparseable; or bad_points: an informational entry for a record that WAS loaded with some series points left out (see intraday_series.bad_points).';

const OLD_QUARANTINE_KIND_COMMENT =
  'What the item was meant to be: record, user, connection_event, frame, legacy:<object>, unparseable.';

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    'alter table validic.intraday_series add column bad_points integer not null default 0',
    'alter table validic.intraday_series add constraint intraday_series_bad_points_check check (bad_points >= 0)',
    `comment on column validic.intraday_series.bad_points is ${quote(BAD_POINTS_COMMENT)}`,
    `comment on column validic_sync.quarantine.kind is ${quote(QUARANTINE_KIND_COMMENT)}`,
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  const statements = [
    `comment on column validic_sync.quarantine.kind is ${quote(OLD_QUARANTINE_KIND_COMMENT)}`,
    'alter table validic.intraday_series drop column bad_points',
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}
