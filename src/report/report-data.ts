/** What the HTML report shows, read from the warehouse in a handful of aggregate queries. */
import type { Kysely } from 'kysely';
import { type Config, configSchema } from '../config/schema.ts';
import { type AuditStatus, readAuditStatus } from '../metrics/audit-status.ts';
import {
  type ReconciliationStatus,
  readReconciliationStatus,
  readStreamGapsStatus,
  type StreamGapsStatus,
} from '../metrics/sync-status.ts';
import { reconcileStreamName } from '../stream/reconciliation.ts';
import type { Database } from '../warehouse/database.ts';
import { countStreamGapsSince, readOpenStreamGaps } from '../warehouse/stream-bookkeeping.ts';
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
  /** Each org's stream: its gaps (open now, recorded and covered lately) and the reconciliation passes. */
  streams: StreamReport[];
}

/** What the report says of one org's stream and its reconciliation (as `status` reads them). */
export interface StreamReport {
  orgId: string;
  /** The primary stream's name (from config; null for an org the config does not name). */
  streamName: string | null;
  gaps: StreamGapsStatus & {
    /** Gaps recorded in the last 7 days, open or covered. */
    recorded7d: number;
    /** Of those, the ones a reconciliation pass has covered. */
    covered7d: number;
  };
  reconciliation: ReconciliationStatus;
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
    streams: await readStreams(db, now, options.config),
  };
}

const WEEK_MS = 7 * 86_400_000;

/** The organizations the report has sections for: the configured ones, and those with users or audits. */
async function reportedOrgIds(db: Kysely<Database>, config: Config | undefined): Promise<string[]> {
  return [
    ...new Set([...(config?.organizations ?? []).map((o) => o.orgId), ...(await listAuditOrgIds(db))]),
  ].sort();
}

async function readStreams(
  db: Kysely<Database>,
  now: Date,
  config: Config | undefined,
): Promise<StreamReport[]> {
  const weekAgo = new Date(now.getTime() - WEEK_MS);
  const out: StreamReport[] = [];
  for (const orgId of await reportedOrgIds(db, config)) {
    const org = config?.organizations.find((o) => o.orgId === orgId);
    const gaps = await readStreamGapsStatus(db, orgId);
    const recorded7d = await countStreamGapsSince(db, orgId, weekAgo);
    // Open gaps are few (a pass covers them within the hour): those of the week are among the oldest.
    const { gaps: open } = await readOpenStreamGaps(db, orgId, 1000);
    const openRecent = open.filter((g) => Date.parse(g.recordedAt) >= weekAgo.getTime()).length;
    out.push({
      orgId,
      streamName: org?.stream.name ?? null,
      gaps: { ...gaps, recorded7d, covered7d: Math.max(0, recorded7d - openRecent) },
      reconciliation: await readReconciliationStatus(
        db,
        orgId,
        org?.stream.reconcile ? reconcileStreamName(org.stream) : null,
        now,
      ),
    });
  }
  return out;
}

async function readAudits(
  db: Kysely<Database>,
  now: Date,
  config: Config | undefined,
): Promise<ReportData['audits']> {
  const audits: ReportData['audits'] = [];
  for (const orgId of await reportedOrgIds(db, config))
    audits.push({
      orgId,
      audit: await readAuditStatus(db, orgId, now, (config ?? configSchema.parse({})).audit.estimateDays),
    });
  return audits;
}
