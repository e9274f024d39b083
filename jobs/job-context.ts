/**
 * What a job may touch (`JobContext`): the few settings it reads, the named warehouse operations and
 * cursor reads, and one organization's clients and credentialed reads; and `defineJob`, which gives a
 * job of the catalog this context.
 */

import type { z } from 'zod';
import type { OrgBudget } from '../src/budget/read-budget-plan.ts';
import type { Config, OrganizationConfig } from '../src/config/schema.ts';
import type { HttpClient } from '../src/http/http-client-types.ts';
import {
  type ConfirmLegacyDeletesInput,
  type ConfirmLegacyDeletesResult,
  confirmLegacyDeletes,
} from '../src/legacy/confirm-legacy-deletes.ts';
import {
  findLegacyRecord,
  type GetLegacyRecordInput,
  type LegacyClient,
} from '../src/legacy/legacy-client.ts';
import { type LegacyWindowSettings, legacyWindowSettings } from '../src/legacy/legacy-windows.ts';
import { loadLegacyPages } from '../src/legacy/load-legacy-pages.ts';
import type { Logger } from '../src/log/logger.ts';
import { resumePushNotifications } from '../src/push/process-push-notification.ts';
import type { PayloadSchemas } from '../src/queue/enqueue-job.ts';
import type { CatalogPayloads } from '../src/queue/job-catalog.ts';
import { defineJobFor, type JobDefinition } from '../src/queue/job-definition.ts';
import type { JobExecution } from '../src/queue/job-execution.ts';
import type { StreamConsumerOptionsInput } from '../src/stream/consumer-options.ts';
import {
  type ReconcileOrgOptions,
  type ReconcileOrgSummary,
  reconcileOrg,
} from '../src/stream/reconcile-org.ts';
import type { PlatformClock } from '../src/time/platform-clock.ts';
import type { StreamsClient } from '../src/validic/streams-client.ts';
import type { V2Client } from '../src/validic/v2-client.ts';
import {
  auditCoverageStart,
  auditedCellKeys,
  cellSyncCovered,
  currentVersions,
  liveRecordIds,
  pollableUidsAtRanks,
  readAudit,
  recordAuditCell,
  startAudit,
} from '../src/warehouse/audits.ts';
import { type Cursor, readCursor } from '../src/warehouse/cursors.ts';
import {
  beginFirstSync,
  completeFirstSync,
  countFirstSyncUsers,
  markFirstSyncPolled,
  moveFirstSyncOn,
} from '../src/warehouse/first-sync.ts';
import { markLegacyDeleted } from '../src/warehouse/legacy-deletes.ts';
import { applyBatch } from '../src/warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../src/warehouse/open-warehouse.ts';
import {
  claimPushFetches,
  failPushFetch,
  finishPushFetch,
  prunePushFetches,
} from '../src/warehouse/push-fetch-store.ts';
import { prunePushNotifications } from '../src/warehouse/push-notification-store.ts';
import {
  listPollableUids,
  markRecentPollDone,
  markRecentPollsEnqueued,
} from '../src/warehouse/recent-polls.ts';
import {
  firstListedUsers,
  forgetListing,
  markUnlistedUsersRemoved,
  markUsersRemoved,
  recordListedUsers,
} from '../src/warehouse/remove-users.ts';
import type { PassTrigger } from '../src/warehouse/stream-bookkeeping.ts';
import { absentConnectionEvents, readPrimaryStreamSpan } from '../src/warehouse/stream-bookkeeping.ts';
import {
  analyzeNewTables,
  createMonthsBetween,
  createPartitionsAhead,
  emptyRawBefore,
} from '../src/warehouse/warehouse-upkeep.ts';
import {
  claimRun,
  findUnfinishedRun,
  finishRun,
  finishRunIfComplete,
  listPendingWindows,
  pendingWindowKeys,
  planWindows,
  startRun,
} from '../src/warehouse/window-ledger.ts';
import { JOB_SCHEDULE, type ScheduledJobName } from './job-schedule.ts';

/**
 * What a job may touch: `{ log, warehouse, cursors, org(), signal, attempt, jobId, enqueue, settings,
 * readBudgetPlan(), readPushCap() }`, built by `runtime.jobContext` (src/worker/runtime.ts) from what the
 * runner hands an execution (`JobExecution`, src/queue/job-execution.ts). Not the whole config: the
 * few values jobs read are `settings`. A job never talks HTTP or SQL directly: it composes the org's
 * platform clients, normalization (inside the loader) and the warehouse's named functions (`warehouse`:
 * the loader's entry points and a few queries, no raw `db`).
 *
 * `Payloads` is the catalog a job's `enqueue` is typed by. Its default is `any`, not `PayloadSchemas`: the
 * runtime builds contexts without knowing the catalog, and `any` lets such a context be handed to a job
 * of any catalog (with `PayloadSchemas` TypeScript compares the catalogs and refuses).
 */
export interface JobContext<Payloads extends PayloadSchemas = any> extends JobExecution<Payloads> {
  /** pino child bound to the job id. */
  log: Logger;
  /** The loader's entry points and the named warehouse functions jobs use (`jobWarehouse` below). */
  warehouse: JobWarehouse;
  /** Cursors read through their kinds (src/warehouse/cursors.ts); written with a batch's progress. */
  cursors: JobCursors;
  /** A configured organization's platform clients and the settings jobs read (`JobOrg` below); throws a ConfigError for an unknown org. */
  org(orgId: string): JobOrg;
  /** The few config values jobs read (`JobSettings` below); never the whole config. */
  settings: JobSettings;
  /**
   * The platform's clock as this process knows it (src/time/platform-clock.ts): a window's end, a
   * cursor's end, "today" and "caught up" are the platform's, never the worker's clock.
   */
  platformClock: Pick<PlatformClock, 'now' | 'earliestNow' | 'latestNow' | 'reading'>;
  /** The org's request budget plan as of `now` (read-budget-plan.ts, which reads the config jobs do not see). */
  readBudgetPlan(orgId: string, now: number): Promise<OrgBudget>;
  /** The most push may spend per hour (read-budget-plan.ts, `readPushCap`): what push.drain gates on. */
  readPushCap(orgId: string): Promise<number>;
  /**
   * Who holds the runs this process starts (src/warehouse/run-heartbeats.ts): the worker fleet, or this
   * command's process; it renews their heartbeat while it lives.
   */
  runHolder: string;
}

/** What a job of the catalog may touch, its `ctx.enqueue` typed by the catalog. */
export type CatalogJobContext = JobContext<CatalogPayloads>;

const defineCatalogJob = defineJobFor<CatalogJobContext>();

/**
 * `defineJob` of the catalog's job files: `ctx.enqueue` takes the payload type of the job it names, and
 * the job's priority and retry class are its row of JOB_SCHEDULE (job-schedule.ts).
 */
export function defineJob<const Name extends ScheduledJobName, Schema extends z.ZodType, Result>(
  definition: Omit<JobDefinition<Schema, Result, CatalogJobContext>, 'priority' | 'retry'> & { name: Name },
): JobDefinition<Schema, Result, CatalogJobContext> & { name: Name } {
  const schedule: (typeof JOB_SCHEDULE)[ScheduledJobName] | undefined = JOB_SCHEDULE[definition.name];
  if (!schedule) {
    throw new Error(
      `job ${definition.name} has no row in JOB_SCHEDULE (jobs/job-schedule.ts): give it its priority and retry class there`,
    );
  }
  return defineCatalogJob({ ...definition, ...schedule });
}

/** A job outside the catalog (tests, benchmarks): its `ctx.enqueue` takes any name, checked at run time. */
export const defineUncatalogedJob = defineJobFor<JobContext<PayloadSchemas>>();

/**
 * The few config values jobs read, cut from the config once per process (`runtime.jobContext`): a job
 * sees these and not the whole config (no URLs, tokens or other jobs' settings). A job that needs
 * another value gets a field here, with the config key it comes from.
 */
export interface JobSettings {
  /** `sync.lookbackDays`: days the recent poll and legacy.sync (without a cursor) look back. */
  lookbackDays: number;
  /** `sync.newUserHistoryDays`: history users.sync backfills for users new since its last listing. */
  newUserHistoryDays: number;
  /** `schedules.reconcileDays`: days connections.recent reconciles. */
  reconcileDays: number;
  /** `sync.legacyWindowHours` / `sync.legacyOverlapMinutes`: legacy latest windows. */
  legacyWindow: LegacyWindowSettings;
  /** `budget.tickSeconds` in ms: the records.recent tick. */
  tickMs: number;
  /** `push.retentionDays`: push.prune deletes stored push bodies older than this. */
  pushRetentionDays: number;
  /**
   * push.drain: `push.coalesceSeconds` in ms and `push.maxItems` (items per part), to resume a cut-off
   * notification as the endpoint would have processed it; its legacy `latest` margin (the overlap, at
   * least a minute); and the organizations' ids, to route the items of a shared-secret notification.
   */
  push: {
    coalesceMs: number;
    partItems: number;
    updatedMarginMs: number;
    organizations: { orgId: string; legacyOrgId?: string }[];
  };
  /** `warehouse.partitionMonthsAhead` and `warehouse.rawRetentionMonths`: warehouse.maintain. */
  partitionMonthsAhead: number;
  rawRetentionMonths: number;
  /**
   * records.audit (src/audit/README.md): `audit.lookbackDays`, `audit.recentShare`, `audit.settleMinutes`
   * in ms, `audit.cellsPerJob`, and `schedules.auditMinutes` (a tick audits that many minutes' share).
   */
  audit: {
    lookbackDays: number;
    recentShare: number;
    settleMs: number;
    cellsPerJob: number;
    tickMinutes: number;
  };
}

export function jobSettings(config: Config): JobSettings {
  return {
    lookbackDays: config.sync.lookbackDays,
    newUserHistoryDays: config.sync.newUserHistoryDays,
    reconcileDays: config.schedules.reconcileDays,
    legacyWindow: legacyWindowSettings(config),
    tickMs: config.budget.tickSeconds * 1000,
    pushRetentionDays: config.push.retentionDays,
    push: {
      coalesceMs: config.push.coalesceSeconds * 1000,
      partItems: config.push.maxItems,
      updatedMarginMs: Math.max(legacyWindowSettings(config).overlapMs, 60_000),
      organizations: config.organizations.map((o) => ({
        orgId: o.orgId,
        ...(o.legacyOrgId ? { legacyOrgId: o.legacyOrgId } : {}),
      })),
    },
    partitionMonthsAhead: config.warehouse.partitionMonthsAhead,
    rawRetentionMonths: config.warehouse.rawRetentionMonths,
    audit: {
      lookbackDays: config.audit.lookbackDays,
      recentShare: config.audit.recentShare,
      settleMs: config.audit.settleMinutes * 60_000,
      cellsPerJob: config.audit.cellsPerJob,
      tickMinutes: config.schedules.auditMinutes,
    },
  };
}

/**
 * What a job may do to the warehouse (`ctx.warehouse`) and read of it (`ctx.cursors`): the loader's entry
 * points and the few named queries the jobs of jobs/ use, each bound to this process's warehouse. A job
 * never holds the raw kysely `db`: one that needs another query gets a function in src/warehouse/ and a
 * line here.
 */

/** Cursors a job reads, each through its kind (src/warehouse/cursors.ts); jobs write them with a batch. */
export interface JobCursors {
  /** The cursor's value parsed by its kind; undefined when never written or not of the kind's shape. */
  read<Value>(orgId: string, cursor: Cursor<Value, any>): Promise<Value | undefined>;
}

export function jobCursors(db: Warehouse['db']): JobCursors {
  return { read: (orgId, cursor) => readCursor(db, orgId, cursor) };
}

export type JobWarehouse = ReturnType<typeof jobWarehouse>;

export function jobWarehouse(warehouse: Warehouse) {
  const { db } = warehouse;
  const onDb =
    <Args extends unknown[], Result>(query: (db: Warehouse['db'], ...args: Args) => Result) =>
    (...args: Args) =>
      query(db, ...args);
  const onWarehouse =
    <Args extends unknown[], Result>(action: (warehouse: Warehouse, ...args: Args) => Result) =>
    (...args: Args) =>
      action(warehouse, ...args);
  const withWarehouse =
    <Input extends { warehouse: Warehouse }, Result>(action: (input: Input) => Result) =>
    (input: Omit<Input, 'warehouse'>) =>
      action({ ...input, warehouse } as Input);
  return {
    // The loader: a batch with its progress (cursors, ledger windows) in one transaction.
    applyBatch: onWarehouse(applyBatch),
    loadLegacyPages: withWarehouse(loadLegacyPages),
    // Marks found outside a batch.
    markUsersRemoved: onDb(markUsersRemoved),
    markUnlistedUsersRemoved: onDb(markUnlistedUsersRemoved),
    // A users listing's uids, page by page (validic_sync.users_listings).
    recordListedUsers: onDb(recordListedUsers),
    forgetListing: onDb(forgetListing),
    firstListedUsers: onDb(firstListedUsers),
    markLegacyDeleted: onDb(markLegacyDeleted),
    // Users to poll and the recent poll's schedule.
    listPollableUids: onDb(listPollableUids),
    markRecentPollsEnqueued: onDb(markRecentPollsEnqueued),
    markRecentPollDone: onDb(markRecentPollDone),
    // The first sync of the primary stream (src/budget/first-sync.ts).
    beginFirstSync: onDb(beginFirstSync),
    markFirstSyncPolled: onDb(markFirstSyncPolled),
    moveFirstSyncOn: onDb(moveFirstSyncOn),
    countFirstSyncUsers: onDb(countFirstSyncUsers),
    completeFirstSync: onDb(completeFirstSync),
    // The backfill ledger.
    startRun: onDb(startRun),
    claimRun: onDb(claimRun),
    findUnfinishedRun: onDb(findUnfinishedRun),
    finishRun: onDb(finishRun),
    planWindows: onDb(planWindows),
    listPendingWindows: onDb(listPendingWindows),
    pendingWindowKeys: onDb(pendingWindowKeys),
    finishRunIfComplete: onDb(finishRunIfComplete),
    // Push's durable queue of fetches (src/warehouse/push-fetch-store.ts).
    claimPushFetches: onDb(claimPushFetches),
    finishPushFetch: onDb(finishPushFetch),
    failPushFetch: onDb(failPushFetch),
    resumePushNotifications: onDb(resumePushNotifications),
    // The completeness audit (src/audit/README.md).
    startAudit: onDb(startAudit),
    auditCoverageStart: onDb(auditCoverageStart),
    readAudit: onDb(readAudit),
    auditedCellKeys: onDb(auditedCellKeys),
    recordAuditCell: onDb(recordAuditCell),
    currentVersions: onDb(currentVersions),
    liveRecordIds: onDb(liveRecordIds),
    pollableUidsAtRanks: onDb(pollableUidsAtRanks),
    cellSyncCovered: onDb(cellSyncCovered),
    // What the primary stream delivered, and which events a reconciliation finds the warehouse lacks.
    readPrimaryStreamSpan: onDb(readPrimaryStreamSpan),
    absentConnectionEvents: onDb(absentConnectionEvents),
    // Upkeep.
    prunePushNotifications: onDb(prunePushNotifications),
    prunePushFetches: onDb(prunePushFetches),
    createPartitionsAhead: onWarehouse(createPartitionsAhead),
    createMonthsBetween: onWarehouse(createMonthsBetween),
    analyzeNewTables: onWarehouse(analyzeNewTables),
    emptyRawBefore: onWarehouse(emptyRawBefore),
  };
}

/**
 * What a job may use of one configured organization (`ctx.org(orgId)`): its platform clients, the reads
 * that need the org's credentials, and the two org settings jobs read. Not the org's config (tokens,
 * URLs, secrets), not its raw HTTP client.
 */
export interface JobOrg {
  v2: V2Client;
  legacy: LegacyClient;
  /** `organizations[].resources`: what records.backfill and records.recent fetch by default. */
  resources: OrganizationConfig['resources'];
  /** `organizations[].stream.name`: the primary stream (its cursors say what it delivered). */
  streamName: string;
  /** The stream's resource filter lets connection events through (no filter, or one naming them). */
  streamCarriesConnections: boolean;
  /** `organizations[].legacy.objects`: what legacy.sync plans by default. */
  legacyObjects: OrganizationConfig['legacy']['objects'];
  /** One legacy record by id; `found: false` when the platform answers 404. */
  findLegacyRecord(input: GetLegacyRecordInput): ReturnType<typeof findLegacyRecord>;
  /** Stored legacy records of a completely read window that it no longer listed: asked for by id, 404 marks them deleted. */
  confirmLegacyDeletes(
    input: Omit<ConfirmLegacyDeletesInput, 'warehouse' | 'org' | 'orgId'>,
  ): Promise<ConfirmLegacyDeletesResult>;
  /**
   * One reconciliation of the org's stream (src/stream/reconcile-org.ts): the replay of the gaps the
   * reconciliation stream cannot reach, then a pass of that stream; each loads what it re-delivers and
   * reports what the primary stream had lost. `replayFrom`: without a reconciliation stream, also replay
   * from this date (the `reconcile` command).
   */
  reconcileStream(input: {
    trigger: PassTrigger;
    signal: AbortSignal;
    log: Logger;
    replayFrom?: string;
    enqueue?: ReconcileOrgOptions['enqueue'];
  }): Promise<ReconcileOrgSummary>;
}

export function jobOrg(
  clients: {
    config: OrganizationConfig;
    http: HttpClient;
    streams: StreamsClient;
    v2: V2Client;
    legacy: LegacyClient;
  },
  warehouse: Warehouse,
  consumerOptions: StreamConsumerOptionsInput = {},
): JobOrg {
  const { config } = clients;
  return {
    v2: clients.v2,
    legacy: clients.legacy,
    resources: config.resources,
    streamName: config.stream.name,
    streamCarriesConnections:
      !config.stream.resources?.length || config.stream.resources.includes('connection'),
    legacyObjects: config.legacy.objects,
    findLegacyRecord: (input) => findLegacyRecord(clients, input),
    confirmLegacyDeletes: (input) =>
      confirmLegacyDeletes({ ...input, warehouse, org: clients, orgId: config.orgId }),
    reconcileStream: ({ trigger, signal, log, replayFrom, enqueue }) =>
      reconcileOrg({
        warehouse,
        org: clients,
        signal,
        trigger,
        consumerOptions,
        log,
        ...(replayFrom ? { replayFrom } : {}),
        ...(enqueue ? { enqueue } : {}),
      }),
  };
}
