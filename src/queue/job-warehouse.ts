/**
 * What a job may do to the warehouse (`ctx.warehouse`) and read of it (`ctx.cursors`): the loader's entry
 * points and the few named queries the jobs of jobs/ use, each bound to this process's warehouse. A job
 * never holds the raw kysely `db`: one that needs another query gets a function in src/warehouse/ and a
 * line here.
 */
import type { Kysely } from 'kysely';
import { loadLegacyPages } from '../legacy/load-legacy-pages.ts';
import { resumePushNotifications } from '../push/process-push-notification.ts';
import {
  auditCoverageStart,
  auditedCellKeys,
  currentVersions,
  liveRecordIds,
  nextUsersInRotation,
  readAudit,
  recordAuditCell,
  startAudit,
} from '../warehouse/audits.ts';
import type { Cursor } from '../warehouse/cursors.ts';
import { readCursor } from '../warehouse/cursors.ts';
import type { Database } from '../warehouse/database.ts';
import { markLegacyDeleted } from '../warehouse/legacy-deletes.ts';
import { applyBatch } from '../warehouse/loader/apply-batch.ts';
import type { Warehouse } from '../warehouse/open-warehouse.ts';
import {
  claimPushFetches,
  failPushFetch,
  finishPushFetch,
  prunePushFetches,
  prunePushNotifications,
} from '../warehouse/push-store.ts';
import { listPollableUids, markRecentPollDone, markRecentPollsEnqueued } from '../warehouse/recent-polls.ts';
import {
  firstListedUsers,
  forgetListing,
  markUnlistedUsersRemoved,
  markUsersRemoved,
  recordListedUsers,
} from '../warehouse/remove-users.ts';
import { analyzeNewTables, createPartitionsAhead, emptyRawBefore } from '../warehouse/warehouse-upkeep.ts';
import {
  findUnfinishedRun,
  finishRun,
  finishRunIfComplete,
  listPendingWindows,
  pendingWindowKeys,
  planWindows,
  startRun,
} from '../warehouse/window-ledger.ts';

/** Cursors a job reads, each through its kind (src/warehouse/cursors.ts); jobs write them with a batch. */
export interface JobCursors {
  /** The cursor's value parsed by its kind; undefined when never written or not of the kind's shape. */
  read<Value>(orgId: string, cursor: Cursor<Value, any>): Promise<Value | undefined>;
}

export function jobCursors(db: Kysely<Database>): JobCursors {
  return { read: (orgId, cursor) => readCursor(db, orgId, cursor) };
}

export type JobWarehouse = ReturnType<typeof jobWarehouse>;

export function jobWarehouse(warehouse: Warehouse) {
  const { db } = warehouse;
  const onDb =
    <Args extends unknown[], Result>(query: (db: Kysely<Database>, ...args: Args) => Result) =>
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
    // The backfill ledger.
    startRun: onDb(startRun),
    findUnfinishedRun: onDb(findUnfinishedRun),
    finishRun: onDb(finishRun),
    planWindows: onDb(planWindows),
    listPendingWindows: onDb(listPendingWindows),
    pendingWindowKeys: onDb(pendingWindowKeys),
    finishRunIfComplete: onDb(finishRunIfComplete),
    // Push's durable queue of fetches (src/warehouse/push-store.ts).
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
    nextUsersInRotation: onDb(nextUsersInRotation),
    // Upkeep.
    prunePushNotifications: onDb(prunePushNotifications),
    prunePushFetches: onDb(prunePushFetches),
    createPartitionsAhead: onWarehouse(createPartitionsAhead),
    analyzeNewTables: onWarehouse(analyzeNewTables),
    emptyRawBefore: onWarehouse(emptyRawBefore),
  };
}
