/**
 * What `status` (and the report, and the worker's gauges) says of each organization: cursors, the
 * ledger, quarantine, the queue, the streams and their reconciliation, the budget plan, the audit. Read
 * from the warehouse and, when given, from Redis (queue depths, failed jobs, schedulers, stream slot
 * holders). Read-only: it never migrates or writes. Works the same on PostgreSQL and on the embedded
 * PGlite.
 */
import type { Kysely } from 'kysely';
import { type FirstSyncStatus, readFirstSyncStatus } from '../budget/first-sync.ts';
import { type BudgetStatus, describeBudget, readBudgetPlan } from '../budget/read-budget-plan.ts';
import { type Config, configSchema } from '../config/schema.ts';
import type { FailedJobInfo, JobCounts } from '../queue/job-queue.ts';
import { deliveryDead } from '../stream/interrupted-deliveries.ts';
import {
  type CursorEntry,
  LEGACY_LATEST_CURSOR_PREFIX,
  listCursors,
  reconcileLastCursor,
  STREAM_CURSOR_KEY_PREFIX,
  streamCursorKeyPrefix,
  usersFullSyncCursor,
} from '../warehouse/cursors.ts';
import type { Database } from '../warehouse/database.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import { readPlatformClocks } from '../warehouse/platform-clock-store.ts';
import { countQuarantine, type QuarantineCount } from '../warehouse/quarantine.ts';
import { heartbeatStopped } from '../warehouse/run-heartbeats.ts';
import {
  type ReconcilePassRow,
  type ReconcileTotals,
  readLastDelivery,
  readLastReconcilePass,
  readOpenStreamGaps,
  readRunningDeliveries,
  reconcileTotalsSince,
  type StoredStreamGap,
} from '../warehouse/stream-bookkeeping.ts';
import { listKnownOrgIds, listShownRuns, readOrgDataSummary } from '../warehouse/summaries.ts';
import { type LedgerSummary, summarizeLedger } from '../warehouse/window-ledger.ts';
import { type AuditStatus, readAuditStatus } from './audit-status.ts';

export interface RunStatus extends LedgerSummary {
  id: string;
  command: string;
  /**
   * running, done, failed, or interrupted: its command ended before it was done, or (a row still marked
   * running) its holder's heartbeat stopped over a minute ago: the process died (src/warehouse/run-heartbeats.ts).
   */
  status: string;
  startedAt: string;
  finishedAt: string | null;
  /** Who runs it: worker (the fleet) or command <host> pid <pid>; null for runs from before heartbeats. */
  holder: string | null;
  heartbeatAt: string | null;
  args: unknown;
}

export interface CursorStatus {
  key: string;
  value: unknown;
  updatedAt: string;
}

export interface OrgStatus {
  orgId: string;
  users: { count: number; lastFullSync: string | null };
  records: {
    /** Exact up to 100,000 records; above it the planner's estimate (`countIsEstimate`). */
    count: number;
    countIsEstimate: boolean;
    newestCreatedAt: string | null;
    newestIngestedAt: string | null;
    /** now − newest platform created_at, seconds. */
    lagSeconds: number | null;
    /** now − newest ingested_at, seconds. */
    sinceIngestSeconds: number | null;
  };
  stream: {
    name: string | null;
    cursors: CursorStatus[];
    /** Spans in which the stream may have lost events, open until a reconciliation pass covers them. */
    gaps: StreamGapsStatus;
    /** Slot → holder, when Redis is available. */
    slots?: Record<number, string>;
  };
  /** The last reconciliation of connection events (`reconcile` command, connections.recent). */
  reconcile: unknown;
  /** The reconciliation stream's passes: what they re-delivered and found missing. */
  reconciliation: ReconciliationStatus;
  legacy: CursorStatus[];
  otherCursors: CursorStatus[];
  runs: RunStatus[];
  quarantine: QuarantineCount[];
  /** The request budget plan of a configured org (src/budget/plan-request-budget.ts). */
  budget?: BudgetStatus;
  /** A configured org's first sync: every user covered from before its stream began (src/budget/first-sync.ts). */
  firstSync?: FirstSyncStatus;
  /** The completeness audit: the last run, the scheduled estimate per stratum, drift per day. */
  audit: AuditStatus;
}

export interface QueueStatus {
  counts: JobCounts;
  failed: FailedJobInfo[];
  schedulers: { id: string; name: string; every: number | undefined; next: number | undefined }[];
}

export interface SyncStatus {
  at: string;
  warehouse: 'postgres' | 'pglite';
  orgs: OrgStatus[];
  /** Absent without Redis. */
  queue?: QueueStatus;
  /** Why the queue part is missing although REDIS_URL is set (Redis unreachable). */
  queueError?: string;
  /**
   * The worker's clock against the platform's, as measured in the last hour by the process whose offset
   * is largest (validic_sync.platform_clock): the platform's minus the worker's, seconds.
   */
  platformClock?: { offsetSeconds: number; uncertaintySeconds: number; reporter: string; measuredAt: string };
}

export interface CollectStatusOptions {
  warehouse: Warehouse;
  /** Configured orgs (others found in the warehouse are listed too). */
  orgIds: string[];
  /** Stream name per org, from config. */
  streamNames?: Record<string, string>;
  /** Reconciliation stream name per org, from config (absent: reconciliation off). */
  reconcileStreamNames?: Record<string, string>;
  queue?: {
    counts(): Promise<JobCounts>;
    failed(limit: number): Promise<FailedJobInfo[]>;
    schedulers(): Promise<QueueStatus['schedulers']>;
  };
  slots?: { holders(orgId: string, streamName: string): Promise<Record<number, string>> };
  /** With the config, each configured org's budget plan is shown. */
  config?: Config;
  /** The requests per hour an org's shared budget grants now (read from Redis by the caller). */
  grantedPerHour?: (orgId: string) => Promise<number | undefined>;
  now?: Date;
}

const iso = (d: Date | string | null | undefined): string | null =>
  d == null ? null : d instanceof Date ? d.toISOString() : new Date(d).toISOString();

const cursor = (c: CursorEntry): CursorStatus => ({
  key: c.key,
  value: c.value,
  updatedAt: iso(c.updatedAt)!,
});

export async function collectSyncStatus(options: CollectStatusOptions): Promise<SyncStatus> {
  const { warehouse } = options;
  const db = warehouse.db;
  const now = options.now ?? new Date();
  const orgIds = [...new Set([...options.orgIds, ...(await listKnownOrgIds(db))])].sort();

  const orgs: OrgStatus[] = [];
  for (const orgId of orgIds) {
    const cursors = await listCursors(db, orgId);
    const data = await readOrgDataSummary(db, orgId);
    const ageSeconds = (d: Date | null) =>
      d == null ? null : Math.max(0, Math.round((now.getTime() - new Date(d).getTime()) / 1000));

    const streamName = options.streamNames?.[orgId] ?? null;
    const cursorPrefix = streamName ? streamCursorKeyPrefix(streamName) : STREAM_CURSOR_KEY_PREFIX;
    const byKey = new Map(cursors.map((c) => [c.key, c]));
    const used = new Set<string>();
    const take = (predicate: (key: string) => boolean) =>
      cursors
        .filter((c) => predicate(c.key))
        .map((c) => {
          used.add(c.key);
          return cursor(c);
        });
    const streamCursors = take((k) => k.startsWith(cursorPrefix));
    const legacy = take((k) => k.startsWith(LEGACY_LATEST_CURSOR_PREFIX));
    const usersFullSync = usersFullSyncCursor();
    const reconcileLast = reconcileLastCursor();
    // `stream:gaps` is the cursor gaps were kept in before validic_sync.stream_gaps (migration 0016).
    for (const key of [usersFullSync.key, reconcileLast.key, 'stream:gaps']) used.add(key);
    const otherCursors = cursors.filter((c) => !used.has(c.key)).map(cursor);

    const runs = await listShownRuns(db, orgId, new Date(now.getTime() - 7 * 86_400_000));
    const runStatuses: RunStatus[] = [];
    for (const run of runs) {
      const lost =
        run.status === 'running' &&
        heartbeatStopped({ heartbeatAt: run.heartbeat_at, startedAt: run.started_at }, now);
      runStatuses.push({
        id: run.id,
        command: run.command,
        status: lost ? 'interrupted' : run.status,
        startedAt: iso(run.started_at)!,
        finishedAt: iso(run.finished_at),
        holder: run.holder,
        heartbeatAt: iso(run.heartbeat_at),
        args: run.args,
        ...(await summarizeLedger(db, run.id)),
      });
    }

    const stream: OrgStatus['stream'] = {
      name: streamName,
      cursors: streamCursors,
      gaps: await readStreamGapsStatus(db, orgId),
    };
    if (options.slots && streamName) stream.slots = await options.slots.holders(orgId, streamName);

    const lastFullSync = usersFullSync.parse(byKey.get(usersFullSync.key)?.value);
    orgs.push({
      orgId,
      users: { count: data.users, lastFullSync: lastFullSync?.at ?? null },
      records: {
        count: data.records,
        countIsEstimate: data.recordsIsEstimate,
        newestCreatedAt: iso(data.newestCreatedAt),
        newestIngestedAt: iso(data.newestIngestedAt),
        lagSeconds: ageSeconds(data.newestCreatedAt),
        sinceIngestSeconds: ageSeconds(data.newestIngestedAt),
      },
      stream,
      reconcile: byKey.get(reconcileLast.key)?.value ?? null,
      reconciliation: await readReconciliationStatus(
        db,
        orgId,
        options.reconcileStreamNames?.[orgId] ?? null,
        now,
      ),
      legacy,
      otherCursors,
      runs: runStatuses,
      quarantine: await countQuarantine(db, orgId),
      audit: await readAuditStatus(
        db,
        orgId,
        now,
        (options.config ?? configSchema.parse({})).audit.estimateDays,
      ),
    });
    const orgConfig = options.config?.organizations.find((o) => o.orgId === orgId);
    if (options.config && orgConfig) {
      try {
        const budget = await readBudgetPlan(db, options.config, orgConfig, now.getTime());
        const described = describeBudget(budget, now.getTime());
        const granted = await options.grantedPerHour?.(orgId);
        if (granted !== undefined) described.grantedPerHour = Math.round(granted);
        orgs.at(-1)!.budget = described;
        orgs.at(-1)!.firstSync = await readFirstSyncStatus(db, orgId, budget);
      } catch (error) {
        // A warehouse not yet migrated to the recent-poll schedule still shows everything else.
        if (!/does not exist/.test((error as Error).message)) throw error;
      }
    }
  }

  const status: SyncStatus = { at: now.toISOString(), warehouse: warehouse.kind, orgs };
  const [clock] = await readPlatformClocks(db).catch(() => []);
  if (clock) {
    status.platformClock = {
      offsetSeconds: Math.round(clock.offsetMs / 100) / 10,
      uncertaintySeconds: Math.round(clock.uncertaintyMs / 100) / 10,
      reporter: clock.reporter,
      measuredAt: clock.observedAt.toISOString(),
    };
  }
  if (options.queue) {
    status.queue = {
      counts: await options.queue.counts(),
      failed: await options.queue.failed(10),
      schedulers: await options.queue.schedulers(),
    };
  }
  return status;
}

/**
 * The stream's gaps and the reconciliation stream's passes as `status` shows them: the open gaps (spans
 * in which events may be missing until a pass covers them), the last pass, and what the passes found
 * missing over the last day and week: the product's measured loss rate.
 */
export interface StreamGapsStatus {
  /** Gaps no reconciliation pass has covered yet. */
  open: number;
  /** The oldest open ones (at most 10). */
  oldest: StoredStreamGap[];
}

export interface ReconciliationStatus {
  /** The reconciliation stream's name (it counts toward the platform's 5 streams per customer). */
  streamName: string | null;
  lastPass: ReconcilePassRow | null;
  /** The newest delivery of any kind (a pass, or a replay of the gaps the reconciliation stream cannot reach). */
  lastDelivery: ReconcilePassRow | null;
  /**
   * Deliveries still marked running whose process is gone (its host says so, or no sign of life for 2
   * minutes): the next `stream`, `reconcile` or worker start marks them interrupted and replays their gaps.
   */
  interrupted: number;
  last24h: ReconcileTotals;
  last7d: ReconcileTotals;
}

const DAY_MS = 86_400_000;

export async function readStreamGapsStatus(db: Kysely<Database>, orgId: string): Promise<StreamGapsStatus> {
  const { open, gaps } = await readOpenStreamGaps(db, orgId, 10);
  return { open, oldest: gaps };
}

export async function readReconciliationStatus(
  db: Kysely<Database>,
  orgId: string,
  streamName: string | null,
  now: Date,
): Promise<ReconciliationStatus> {
  return {
    streamName,
    lastPass: streamName ? ((await readLastReconcilePass(db, orgId, streamName)) ?? null) : null,
    lastDelivery: (await readLastDelivery(db, orgId)) ?? null,
    interrupted: (await readRunningDeliveries(db, orgId)).filter((row) => deliveryDead(row)).length,
    last24h: await reconcileTotalsSince(db, orgId, new Date(now.getTime() - DAY_MS)),
    last7d: await reconcileTotalsSince(db, orgId, new Date(now.getTime() - 7 * DAY_MS)),
  };
}
