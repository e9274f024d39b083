/**
 * `defineJob` and `JobContext` of this catalog: a job's `ctx.enqueue(name, payload)` takes the payload
 * type of the job it names. `JobPayloads` names each job's schema by type only (no runtime import, so
 * the job modules and this file do not form a cycle); jobs/index.ts checks it against the catalog.
 */

import type { JobContext as QueueJobContext } from '../src/queue/job-context.ts';
import { defineJobFor } from '../src/queue/job-definition.ts';
import type { connectionsRecentPayload } from './connections-recent.ts';
import type { connectionsReconcilePayload } from './connections-reconcile.ts';
import type { legacyFetchPayload } from './legacy-fetch.ts';
import type { legacyLatestPayload } from './legacy-latest.ts';
import type { legacySyncPayload } from './legacy-sync.ts';
import type { pushPrunePayload } from './push-prune.ts';
import type { recordsBackfillPayload } from './records-backfill.ts';
import type { recordsPollPayload } from './records-poll.ts';
import type { recordsRecentPayload } from './records-recent.ts';
import type { usersSyncPayload } from './users-sync.ts';
import type { warehouseMaintainPayload } from './warehouse-maintain.ts';

// A type alias, not an interface: it must fit PayloadSchemas' index signature.
export type JobPayloads = {
  'users.sync': typeof usersSyncPayload;
  'records.poll': typeof recordsPollPayload;
  'records.backfill': typeof recordsBackfillPayload;
  'connections.reconcile': typeof connectionsReconcilePayload;
  'connections.recent': typeof connectionsRecentPayload;
  'records.recent': typeof recordsRecentPayload;
  'legacy.sync': typeof legacySyncPayload;
  'legacy.latest': typeof legacyLatestPayload;
  'legacy.fetch': typeof legacyFetchPayload;
  'push.prune': typeof pushPrunePayload;
  'warehouse.maintain': typeof warehouseMaintainPayload;
};

export type JobContext = QueueJobContext<JobPayloads>;

export const defineJob = defineJobFor<JobPayloads>();
