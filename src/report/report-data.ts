/** What the HTML report shows, read from the warehouse in a handful of aggregate queries. */
import { type Kysely, sql } from 'kysely';
import type { Database } from '../warehouse/database.ts';

export interface ReportData {
  generatedAt: string;
  totals: {
    organizations: number;
    users: number;
    records: number;
    deleted: number;
    connectionEvents: number;
    legacyRecords: number;
  };
  /** Records per UTC day of start_time and type (last 60 days with data). */
  perDay: { day: string; type: string; records: number }[];
  perSource: { source: string; type: string; records: number }[];
  freshness: { type: string; source: string; records: number; newestCreatedAt: string | null }[];
  quarantine: { kind: string; reason: string; items: number; lastSeenAt: string | null }[];
}

const iso = (value: unknown): string | null =>
  value === null || value === undefined ? null : value instanceof Date ? value.toISOString() : String(value);

export async function readReportData(db: Kysely<Database>): Promise<ReportData> {
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
  const t = totals.rows[0]!;
  return {
    generatedAt: new Date().toISOString(),
    totals: {
      organizations: t.organizations ?? 0,
      users: t.users ?? 0,
      records: t.records ?? 0,
      deleted: t.deleted ?? 0,
      connectionEvents: t.connection_events ?? 0,
      legacyRecords: t.legacy_records ?? 0,
    },
    perDay: perDay.rows,
    perSource: perSource.rows,
    freshness: freshness.rows.map((r) => ({
      type: r.type,
      source: r.source,
      records: r.records,
      newestCreatedAt: iso(r.newest),
    })),
    quarantine: quarantine.rows.map((r) => ({
      kind: r.kind,
      reason: r.reason,
      items: r.items,
      lastSeenAt: iso(r.last),
    })),
  };
}
