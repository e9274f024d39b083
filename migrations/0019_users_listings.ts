/**
 * 0019: `validic_sync.users_listings`, the uids a users listing showed, page by page, while it runs. At
 * the end of a complete listing the users it did not show are marked removed by one anti-join against it
 * and its rows are deleted, so users.sync holds one page in memory whatever the population (it used to
 * hold every listed uid and send them all in one statement). Rows of a listing whose process died are
 * deleted by the next listing after a day.
 *
 * `first_listed` marks the uids the warehouse did not hold before the page that showed them: the users
 * new to the listing, whose history users.sync backfills.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const TABLE = 'validic_sync.users_listings';

const statements = [
  `create table ${TABLE} (
    org_id text not null,
    listing_id text not null,
    uid text not null,
    listed_at timestamptz not null default now(),
    first_listed boolean not null default false,
    primary key (org_id, listing_id, uid)
  )`,
  `comment on table ${TABLE} is 'Uids a users listing (users.sync) has shown so far, while it runs; deleted when it ends. Bookkeeping of the worker, not data.'`,
  `comment on column ${TABLE}.org_id is 'Validic organization.'`,
  `comment on column ${TABLE}.listing_id is 'One run of the listing.'`,
  `comment on column ${TABLE}.uid is 'A uid the listing showed.'`,
  `comment on column ${TABLE}.listed_at is 'When its page was read.'`,
  `comment on column ${TABLE}.first_listed is 'The warehouse held no such user before this page.'`,
  `create index users_listings_age on ${TABLE} (listed_at)`,
  `alter table ${TABLE} owner to validic_owner`,
  `grant select, insert, update, delete on ${TABLE} to validic_loader`,
];

export async function up(db: Kysely<any>): Promise<void> {
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(`drop table if exists ${TABLE}`).execute(db);
}
