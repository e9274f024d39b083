/**
 * 0035: `validic_sync.platform_clock`, each worker process's measure of how far its clock is off the
 * platform's (from the Date of every answer and the streams' pokes), written about once a minute so that
 * `status`, another process, can show it. Rows not written for a day are deleted by the next write.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const TABLE = 'validic_sync.platform_clock';

const statements = [
  `create table ${TABLE} (
    reporter text primary key,
    offset_ms bigint not null,
    uncertainty_ms bigint not null,
    observed_at timestamptz not null,
    written_at timestamptz not null default now()
  )`,
  `comment on table ${TABLE} is 'How far each worker process''s clock is off the platform''s, as it last measured. Bookkeeping of the worker, not data.'`,
  `comment on column ${TABLE}.reporter is 'The process that measured it: host name and process id.'`,
  `comment on column ${TABLE}.offset_ms is 'The platform''s clock minus the process''s, milliseconds (negative: the worker runs ahead).'`,
  `comment on column ${TABLE}.uncertainty_ms is 'Half the width of the interval the offset is known to lie in, milliseconds.'`,
  `comment on column ${TABLE}.observed_at is 'The process''s time of its last measure (its own clock).'`,
  `comment on column ${TABLE}.written_at is 'The database''s time of the write.'`,
  `alter table ${TABLE} owner to validic_owner`,
  `grant select, insert, update, delete on ${TABLE} to validic_loader`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${TABLE}`).execute(db);
}
