/**
 * 0032: creating a month's partitions never makes a load or a query wait (docs/warehouse.md, "Storage
 * and partitions"; src/warehouse/loader/month-partitions.ts).
 *
 * ATTACH PARTITION locks the parent's default partition (`records_undated`, `record_versions_undated`)
 * ACCESS EXCLUSIVE. 0010's function waited for that lock (up to 30 s), and while a lock request waits,
 * PostgreSQL queues every later request that conflicts with it: one analyst's open read of
 * `validic.records` (ACCESS SHARE on every partition, the default ones included) held the creation,
 * and the creation held every load and every query of every organization behind it. 0010's function
 * also took an advisory lock that every load shared, which anyone could take too.
 *
 * Now `validic_sync.create_month_partitions(first, last)`:
 * - returns 0 at once, taking no lock, when every month of the range exists;
 * - serializes creators on the parents' SHARE UPDATE EXCLUSIVE lock (it conflicts with itself and with
 *   DDL, not with reads or writes, so a waiting creator queues nobody), with a 2 s lock_timeout;
 * - takes ACCESS EXCLUSIVE on both default partitions with NOWAIT, before it creates anything: when a
 *   load or a query is using one, it fails at once with 55P03 (lock_not_available) and the caller tries
 *   again later; it never waits in the queue in front of loads and readers;
 * - no advisory lock.
 * Holding every lock ATTACH needs before it starts, it never waits for a load, so it cannot deadlock
 * with one: loads no longer take a lock of their own against it.
 *
 * Frozen in time: never imports application code. Statements run one at a time (PGlite).
 */
import { type Kysely, sql } from 'kysely';

const CREATE_PARTITIONS = `create or replace function validic_sync.create_month_partitions(first_month date, last_month date)
  returns integer language plpgsql security definer
  set search_path = pg_catalog, pg_temp set lock_timeout = '2s' as $fn$
  declare
    m date;
    t text;
    part text;
    lo text;
    hi text;
    created integer := 0;
  begin
    if first_month is null or last_month is null then return 0; end if;
    if not exists (
      select 1 from generate_series(date_trunc('month', first_month), last_month::timestamp, interval '1 month') as g(month),
                    unnest(array['records', 'record_versions']) as p(t)
       where to_regclass(format('validic_partitions.%I', p.t || '_' || to_char(g.month, 'YYYY_MM'))) is null
    ) then
      return 0;
    end if;
    -- One creator at a time (this mode conflicts with itself), and ATTACH needs it anyway. Reads and
    -- writes do not conflict with it, so a creator waiting here holds nobody up.
    lock table only validic.records, only validic.record_versions in share update exclusive mode;
    -- ATTACH needs the default partitions ACCESS EXCLUSIVE. Waiting for that would queue every load and
    -- every read behind this creation for as long as any transaction reads them: take it now or fail
    -- (55P03), and let the caller try again.
    lock table only validic_partitions.records_undated, only validic_partitions.record_versions_undated
      in access exclusive mode nowait;
    m := date_trunc('month', first_month)::date;
    while m <= last_month loop
      foreach t in array array['records', 'record_versions'] loop
        part := format('%s_%s', t, to_char(m, 'YYYY_MM'));
        if to_regclass(format('validic_partitions.%I', part)) is null then
          lo := to_char(m, 'YYYY-MM-DD') || ' 00:00:00+00';
          hi := to_char(m + interval '1 month', 'YYYY-MM-DD') || ' 00:00:00+00';
          -- Created apart and ATTACHed (SHARE UPDATE EXCLUSIVE on the parent); the CHECK spares ATTACH a
          -- scan of the new table, the default partition's own CHECK a scan of that one.
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

/** 0010's function, restored by `down`. */
const CREATE_PARTITIONS_0010 = `create or replace function validic_sync.create_month_partitions(first_month date, last_month date)
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

/** `create or replace` keeps the owner and the grants of 0010 (validic_owner; EXECUTE to the loader). */
export async function up(db: Kysely<any>): Promise<void> {
  await sql.raw(CREATE_PARTITIONS).execute(db);
}

export async function down(db: Kysely<any>): Promise<void> {
  await sql.raw(CREATE_PARTITIONS_0010).execute(db);
}
