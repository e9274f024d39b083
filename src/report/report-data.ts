/** What the HTML report shows, read from the warehouse in a handful of aggregate queries. */
import { type Kysely, sql } from 'kysely';
import type { Config } from '../config/schema.ts';
import { type AuditStatus, auditPopulation, readAuditStatus } from '../metrics/audit-status.ts';
import { V2_RESOURCES } from '../validic/platform-limits.ts';
import type { Database } from '../warehouse/database.ts';
import { isPollable } from '../warehouse/recent-polls.ts';

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
  /**
   * The completeness audit of each org (configured, with users or with audit runs), as `status` and
   * `/metrics` read it (src/metrics/audit-status.ts): the population is the org's pollable users.
   */
  audits: { orgId: string; audit: AuditStatus }[];
}

export interface ReadReportOptions {
  /** With the config, a configured org's audit population uses its resources and `audit.*` settings. */
  config?: Config;
  now?: Date;
}

const iso = (value: unknown): string | null =>
  value === null || value === undefined ? null : value instanceof Date ? value.toISOString() : String(value);

export async function readReportData(
  db: Kysely<Database>,
  options: ReadReportOptions = {},
): Promise<ReportData> {
  const now = options.now ?? new Date();
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
    generatedAt: now.toISOString(),
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
    audits: await readAudits(db, now, options.config),
  };
}

async function readAudits(
  db: Kysely<Database>,
  now: Date,
  config: Config | undefined,
): Promise<ReportData['audits']> {
  const found = await sql<{ org_id: string; pollable: number }>`
    select o.org_id, (select count(*)::int from validic.users u
                      where u.org_id = o.org_id and ${isPollable('u')}) as pollable
    from (select org_id from validic.users union select org_id from validic_sync.audits) o`.execute(db);
  const pollable = new Map(found.rows.map((r) => [r.org_id, r.pollable]));
  const orgIds = [
    ...new Set([...(config?.organizations ?? []).map((o) => o.orgId), ...pollable.keys()]),
  ].sort();
  const audits: ReportData['audits'] = [];
  for (const orgId of orgIds) {
    const resources = config?.organizations.find((o) => o.orgId === orgId)?.resources ?? V2_RESOURCES;
    audits.push({
      orgId,
      audit: await readAuditStatus(
        db,
        orgId,
        now,
        auditPopulation(config, resources, pollable.get(orgId) ?? 0),
      ),
    });
  }
  return audits;
}
