/** What the HTML report shows, read from the warehouse in a handful of aggregate queries. */
import type { Kysely } from 'kysely';
import { type Config, configSchema } from '../config/schema.ts';
import { type AuditStatus, readAuditStatus } from '../metrics/audit-status.ts';
import type { Database } from '../warehouse/database.ts';
import { listAuditOrgIds, readWarehouseSummary } from '../warehouse/summaries.ts';

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
  const { totals: t, perDay, perSource, freshness, quarantine } = await readWarehouseSummary(db);
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
    perDay,
    perSource,
    freshness: freshness.map((r) => ({
      type: r.type,
      source: r.source,
      records: r.records,
      newestCreatedAt: iso(r.newest),
    })),
    quarantine: quarantine.map((r) => ({
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
  const orgIds = [
    ...new Set([...(config?.organizations ?? []).map((o) => o.orgId), ...(await listAuditOrgIds(db))]),
  ].sort();
  const audits: ReportData['audits'] = [];
  for (const orgId of orgIds)
    audits.push({
      orgId,
      audit: await readAuditStatus(db, orgId, now, (config ?? configSchema.parse({})).audit.estimateDays),
    });
  return audits;
}
