/**
 * What `status` and the HTML report read of the warehouse, each by aggregate (no row per record or
 * user leaves the database): which organizations it knows, an organization's users, records and
 * runs, and the whole warehouse's totals, days, sources, freshness and quarantine.
 */
import { type Kysely, type Selectable, sql } from 'kysely';
import type { Database, RunsTable } from './database.ts';

/** Every organization the warehouse holds cursors, users or runs of. */
export async function listKnownOrgIds(db: Kysely<Database>): Promise<string[]> {
  const found = await sql<{ org_id: string }>`
    select org_id from validic_sync.checkpoints union select org_id from validic.users
    union select org_id from validic_sync.runs`.execute(db);
  return found.rows.map((r) => r.org_id);
}

/** An organization's users and records: counts, newest `created_at` and newest `ingested_at`. */
export async function readOrgDataSummary(
  db: Kysely<Database>,
  orgId: string,
): Promise<{ users: number; records: number; newestCreatedAt: Date | null; newestIngestedAt: Date | null }> {
  const users = await sql<{ n: number }>`
    select count(*)::int as n from validic.users where org_id = ${orgId}`.execute(db);
  const records = await sql<{ n: number; created: Date | null; ingested: Date | null }>`
    select count(*)::int as n, max(created_at) as created, max(ingested_at) as ingested
    from validic.records where org_id = ${orgId}`.execute(db);
  const r = records.rows[0];
  return {
    users: users.rows[0]?.n ?? 0,
    records: r?.n ?? 0,
    newestCreatedAt: r?.created ?? null,
    newestIngestedAt: r?.ingested ?? null,
  };
}

/** An organization's runs worth showing: running ones, and failed ones started after `failedSince`; newest first, 20 at most. */
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
        eb.and([eb('status', '=', 'failed'), eb('started_at', '>', failedSince)]),
      ]),
    )
    .orderBy('started_at', 'desc')
    .limit(20)
    .execute();
}

/** Every organization with users or audit runs (the report's audit sections). */
export async function listAuditOrgIds(db: Kysely<Database>): Promise<string[]> {
  const found = await sql<{ org_id: string }>`
    select org_id from validic.users union select org_id from validic_sync.audits`.execute(db);
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
