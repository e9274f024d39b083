/**
 * 0041: what `status` reads stays the same size as the warehouse grows (src/metrics/README.md).
 *
 * - `validic_sync.backfill_progress`: a backfill run's ledger in sums (windows, done, records, requests),
 *   kept by statement triggers on `validic_sync.backfill_windows` in the transaction that plans or
 *   finishes the windows (one aggregated write per statement, from its transition tables). The sums are
 *   split over 16 rows per run, chosen by the writing backend, so the loaders of a fleet finishing windows
 *   of one run at once do not queue on one row's lock until they commit. Filled here from the windows
 *   already planned.
 * - `records_ingested_idx` on (org_id, ingested_at): the newest arrival is the last entry of the index of
 *   each month's partition. `ingested_at` never changes after a record's first insert, so the index costs
 *   one entry per new record, and an update of a record's version is as HOT-eligible as it was.
 *
 * Frozen in time: this file never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const quote = (text: string) => `'${text.replaceAll("'", "''")}'`;
const PROGRESS = 'validic_sync.backfill_progress';
const WINDOWS = 'validic_sync.backfill_windows';

/** Adds the statement's changes, one row per run, to this backend's shard; skips runs that did not change. */
const ADD = `
  insert into ${PROGRESS} as p (run_id, shard, windows, done, records, requests)
  select run_id, pg_backend_pid() % 16, sum(windows), sum(done), sum(records), sum(requests)
  from changes group by run_id
  having sum(windows) <> 0 or sum(done) <> 0 or sum(records) <> 0 or sum(requests) <> 0
  on conflict (run_id, shard) do update set
    windows = p.windows + excluded.windows, done = p.done + excluded.done,
    records = p.records + excluded.records, requests = p.requests + excluded.requests`;

const onInsert = `create or replace function validic_sync.backfill_progress_on_insert() returns trigger
  language plpgsql as $fn$
begin
  with changes as (
    select run_id, 1 as windows, (status = 'done')::int as done, records::bigint as records,
      requests::bigint as requests from new_windows)
  ${ADD};
  return null;
end $fn$`;

const onUpdate = `create or replace function validic_sync.backfill_progress_on_update() returns trigger
  language plpgsql as $fn$
begin
  with changes as (
    select n.run_id, 0 as windows, (n.status = 'done')::int - (o.status = 'done')::int as done,
      n.records::bigint - o.records as records, n.requests::bigint - o.requests as requests
    from new_windows n join old_windows o on o.run_id = n.run_id and o.window_key = n.window_key)
  ${ADD};
  return null;
end $fn$`;

const onDelete = `create or replace function validic_sync.backfill_progress_on_delete() returns trigger
  language plpgsql as $fn$
begin
  with changes as (
    select run_id, -1 as windows, -(status = 'done')::int as done, -records::bigint as records,
      -requests::bigint as requests from old_windows)
  ${ADD};
  return null;
end $fn$`;

export async function up(db: Kysely<any>): Promise<void> {
  const statements = [
    `create table ${PROGRESS} (
      run_id text not null,
      shard smallint not null,
      windows bigint not null default 0,
      done bigint not null default 0,
      records bigint not null default 0,
      requests bigint not null default 0,
      primary key (run_id, shard)
    )`,
    `comment on table ${PROGRESS} is ${quote("A backfill run's ledger in sums, kept by triggers on backfill_windows in the same transaction; a run's figures are the sums of its rows (one per writing backend's shard). Bookkeeping of the worker, not data.")}`,
    `comment on column ${PROGRESS}.run_id is ${quote('runs.id.')}`,
    `comment on column ${PROGRESS}.shard is ${quote('Which of the run’s 16 rows (by the backend that wrote), so concurrent writers do not wait on one row.')}`,
    `comment on column ${PROGRESS}.windows is ${quote('Windows planned.')}`,
    `comment on column ${PROGRESS}.done is ${quote('Windows done.')}`,
    `comment on column ${PROGRESS}.records is ${quote('Records the done windows brought.')}`,
    `comment on column ${PROGRESS}.requests is ${quote('HTTP requests the windows cost.')}`,
    `alter table ${PROGRESS} owner to validic_owner`,
    `grant select, insert, update, delete on ${PROGRESS} to validic_loader`,
    onInsert,
    onUpdate,
    onDelete,
    `alter function validic_sync.backfill_progress_on_insert() owner to validic_owner`,
    `alter function validic_sync.backfill_progress_on_update() owner to validic_owner`,
    `alter function validic_sync.backfill_progress_on_delete() owner to validic_owner`,
    `create trigger backfill_progress_insert after insert on ${WINDOWS}
       referencing new table as new_windows for each statement execute function validic_sync.backfill_progress_on_insert()`,
    `create trigger backfill_progress_update after update on ${WINDOWS}
       referencing old table as old_windows new table as new_windows
       for each statement execute function validic_sync.backfill_progress_on_update()`,
    `create trigger backfill_progress_delete after delete on ${WINDOWS}
       referencing old table as old_windows for each statement execute function validic_sync.backfill_progress_on_delete()`,
    `insert into ${PROGRESS} (run_id, shard, windows, done, records, requests)
       select run_id, 0, count(*), count(*) filter (where status = 'done'), coalesce(sum(records), 0),
         coalesce(sum(requests), 0)
       from ${WINDOWS} group by run_id`,
    'create index records_ingested_idx on validic.records (org_id, ingested_at)',
  ];
  for (const statement of statements) await sql.raw(statement).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  for (const statement of [
    'drop index if exists validic.records_ingested_idx',
    `drop trigger if exists backfill_progress_insert on ${WINDOWS}`,
    `drop trigger if exists backfill_progress_update on ${WINDOWS}`,
    `drop trigger if exists backfill_progress_delete on ${WINDOWS}`,
    'drop function if exists validic_sync.backfill_progress_on_insert()',
    'drop function if exists validic_sync.backfill_progress_on_update()',
    'drop function if exists validic_sync.backfill_progress_on_delete()',
    `drop table if exists ${PROGRESS}`,
  ])
    await sql.raw(statement).execute(db);
}
