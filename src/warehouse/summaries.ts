/**
 * What `status` and the HTML report read of the warehouse, each by aggregate (no row per record or
 * user leaves the database): which organizations it knows, an organization's users, records and
 * runs, and the whole warehouse's totals, days, sources, freshness and quarantine. `status`'s reads
 * cost the same whatever the number of records (src/metrics/README.md): a count stops at
 * EXACT_COUNT_LIMIT and gives way to the planner's statistics; the newest times are the last entries of
 * indexes.
 */
import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database, RunsTable } from './database.ts';

/**
 * `user_orgs`, the organizations of validic.users, read by skipping from one org_id to the next along the
 * users' primary key (a recursive loose index scan): one index probe per organization, not a read of
 * every user. Its last row is null.
 */
const USER_ORGS_SKIP_SCAN = sql`with recursive user_orgs(org_id) as (
      select min(org_id) from validic.users
      union all
      select (select min(u.org_id) from validic.users u where u.org_id > o.org_id)
      from user_orgs o where o.org_id is not null
    )`;

/** Every organization the warehouse holds cursors, users (by the skip scan above) or runs of. */
export async function listKnownOrgIds(db: Kysely<Database>): Promise<string[]> {
  const found = await sql<{ org_id: string }>`
    ${USER_ORGS_SKIP_SCAN}
    select org_id from validic_sync.checkpoints
    union select org_id from user_orgs where org_id is not null
    union select org_id from validic_sync.runs`.execute(db);
  return found.rows.map((r) => r.org_id);
}

/**
 * Records counted exactly up to this many; above it `status` gives the planner's estimate (and says so).
 * Counting stops here, so the count costs the same at a hundred million records as at a hundred thousand.
 */
export const EXACT_COUNT_LIMIT = 100_000;

export interface OrgDataSummary {
  users: number;
  /** Exact up to EXACT_COUNT_LIMIT; above it the planner's estimate (`recordsIsEstimate`). */
  records: number;
  recordsIsEstimate: boolean;
  newestCreatedAt: Date | null;
  newestIngestedAt: Date | null;
}

/**
 * An organization's users and records: counts, newest `created_at` and newest `ingested_at`. The records
 * are counted up to EXACT_COUNT_LIMIT (an index-only walk that stops there); past it, the count is the
 * planner's (recordsEstimate). The newest times are each the last entry of an index per month's partition
 * (records_created_idx, records_ingested_idx).
 */
export async function readOrgDataSummary(db: Kysely<Database>, orgId: string): Promise<OrgDataSummary> {
  const users = await sql<{ n: number }>`
    select count(*)::int as n from validic.users where org_id = ${orgId}`.execute(db);
  const bounded = await sql<{ n: number }>`
    select count(*)::int as n from (
      select 1 from validic.records where org_id = ${orgId} limit ${EXACT_COUNT_LIMIT + 1}
    ) r`.execute(db);
  const newest = await sql<{ created: Date | null; ingested: Date | null }>`
    select (select max(created_at) from validic.records where org_id = ${orgId}) as created,
      (select max(ingested_at) from validic.records where org_id = ${orgId}) as ingested`.execute(db);
  const counted = bounded.rows[0]?.n ?? 0;
  const overLimit = counted > EXACT_COUNT_LIMIT;
  return {
    users: users.rows[0]?.n ?? 0,
    records: overLimit ? Math.max(EXACT_COUNT_LIMIT + 1, await recordsEstimate(db, orgId)) : counted,
    recordsIsEstimate: overLimit,
    newestCreatedAt: newest.rows[0]?.created ?? null,
    newestIngestedAt: newest.rows[0]?.ingested ?? null,
  };
}

/**
 * The planner's estimate of an organization's records: each month's partition's row count
 * (`pg_class.reltuples`, kept by autovacuum and ANALYZE) times the organization's share of its `org_id`
 * values (`pg_stats`: the most common values' frequencies, else an even share of the rest). A partition
 * never analyzed, or whose statistics this login may not read (row-level security), counts whole when
 * the warehouse holds one organization and not at all otherwise: an estimate, and `status` says so.
 */
export async function recordsEstimate(db: Kysely<Database>, orgId: string): Promise<number> {
  const { rows } = await sql<{ estimate: number | null }>`
    ${USER_ORGS_SKIP_SCAN}
    select sum(greatest(c.reltuples, 0) * coalesce(
      case
        when ${orgId} = any(s.vals) then s.freqs[array_position(s.vals, ${orgId})]
        when s.distinct_values is not null then
          greatest(0, 1 - coalesce((select sum(f) from unnest(s.freqs) f), 0) - s.null_frac)
            / greatest(1, s.distinct_values - coalesce(cardinality(s.freqs), 0))
      end,
      case when (select count(*) from user_orgs where org_id is not null) <= 1 then 1 else 0 end))::float8 as estimate
    from pg_partition_tree('validic.records'::regclass) t
    join pg_class c on c.oid = t.relid
    join pg_namespace n on n.oid = c.relnamespace
    left join lateral (
      select st.most_common_vals::text::text[] as vals, st.most_common_freqs as freqs, st.null_frac,
        case when st.n_distinct < 0 then -st.n_distinct * greatest(c.reltuples, 0) else st.n_distinct end
          as distinct_values
      from pg_stats st
      where st.schemaname = n.nspname and st.tablename = c.relname and st.attname = 'org_id'
    ) s on true
    where t.isleaf`.execute(db);
  return Math.round(rows[0]?.estimate ?? 0);
}

/**
 * An organization's runs worth showing: running ones, and failed or interrupted ones started after
 * `failedSince`; newest first, 20 at most.
 */
export async function listShownRuns(
  db: Kysely<Database>,
  orgId: string,
  failedSince: Date,
): Promise<Selectable<RunsTable>[]> {
  return await db
    .selectFrom('validic_sync.runs')
    .selectAll()
    .where('org_id', '=', orgId)
    .where((eb) =>
      eb.or([
        eb('status', '=', 'running'),
        eb.and([eb('status', 'in', ['failed', 'interrupted']), eb('started_at', '>', failedSince)]),
      ]),
    )
    .orderBy('started_at', 'desc')
    .limit(20)
    .execute();
}

/** Every organization with users or audit runs (the report's audit sections); users by skip scan, as above. */
export async function listAuditOrgIds(db: Kysely<Database>): Promise<string[]> {
  const found = await sql<{ org_id: string }>`
    ${USER_ORGS_SKIP_SCAN}
    select org_id from user_orgs where org_id is not null
    union select org_id from validic_sync.audits`.execute(db);
  return found.rows.map((r) => r.org_id);
}

/** The whole warehouse in aggregates, for the HTML report. */
export interface WarehouseSummary {
  totals: Record<string, number>;
  /** Records per UTC day of start_time and type (the last 60 days with data). */
  perDay: { day: string; type: string; records: number }[];
  perSource: { source: string; type: string; records: number }[];
  freshness: { type: string; source: string; records: number; newest: unknown }[];
  quarantine: { kind: string; reason: string; items: number; last: unknown }[];
}

export async function readWarehouseSummary(db: Kysely<Database>): Promise<WarehouseSummary> {
  const totals = await sql<Record<string, number>>`
    select (select count(distinct org_id) from validic.users)::int as organizations,
           (select count(*) from validic.users)::int as users,
           (select count(*) from validic.records)::int as records,
           (select count(*) from validic.records where deleted_at is not null)::int as deleted,
           (select count(*) from validic.connection_events)::int as connection_events,
           (select count(*) from validic.legacy_records)::int as legacy_records`.execute(db);
  const perDay = await sql<{ day: string; type: string; records: number }>`
    with days as (select distinct (start_time at time zone 'UTC')::date as day from validic.records
                  where start_time is not null order by 1 desc limit 60)
    select to_char(d.day, 'YYYY-MM-DD') as day, r.type, count(*)::int as records
    from days d join validic.records r on (r.start_time at time zone 'UTC')::date = d.day
    group by d.day, r.type order by d.day, r.type`.execute(db);
  const perSource = await sql<{ source: string; type: string; records: number }>`
    select coalesce(source_type, '(none)') as source, type, count(*)::int as records
    from validic.records group by 1, 2 order by 1, 2`.execute(db);
  const freshness = await sql<{ type: string; source: string; records: number; newest: unknown }>`
    select record_type as type, coalesce(source_type, '(none)') as source, records, newest_created_at as newest
    from validic.data_freshness order by newest_created_at asc nulls first`.execute(db);
  const quarantine = await sql<{ kind: string; reason: string; items: number; last: unknown }>`
    select kind, reason, count(*)::int as items, max(last_seen_at) as last
    from validic_sync.quarantine group by kind, reason order by items desc limit 50`.execute(db);
  return {
    totals: totals.rows[0] ?? {},
    perDay: perDay.rows,
    perSource: perSource.rows,
    freshness: freshness.rows,
    quarantine: quarantine.rows,
  };
}

/** What the demo prints of the warehouse it filled: records by type and by source, and the other tables' counts. */
export async function readDemoTables(db: Kysely<Database>): Promise<{
  byType: Record<string, unknown>[];
  bySource: Record<string, unknown>[];
  totals: Record<string, number>[];
}> {
  const byType = await sql<Record<string, unknown>>`
    select type, count(*)::int as records, count(*) filter (where deleted_at is not null)::int as deleted,
      string_agg(distinct arrived_via, ', ') as arrived_via
    from validic.records group by type order by type`.execute(db);
  const bySource = await sql<Record<string, unknown>>`
    select coalesce(source_type, '(none)') as source, count(*)::int as records from validic.records
    group by 1 order by records desc`.execute(db);
  const totals = await sql<Record<string, number>>`
    select (select count(*) from validic.users)::int as users,
      (select count(*) from validic.connection_events)::int as connection_events,
      (select count(*) from validic.legacy_records)::int as legacy_records,
      (select count(*) from validic.record_versions)::int as earlier_versions,
      (select count(*) from validic_sync.quarantine)::int as quarantined`.execute(db);
  return { byType: byType.rows, bySource: bySource.rows, totals: totals.rows };
}

/** One of the guide's example queries (src/docs/example-queries.ts), as written there, its rows. */
export async function runExampleQuery(
  db: Kysely<Database>,
  text: string,
): Promise<Record<string, unknown>[]> {
  return (await sql.raw<Record<string, unknown>>(text.replace(/;\s*$/, '')).execute(db)).rows;
}
