/**
 * The job catalog: every job module by name. The worker registers these with BullMQ; one-shot commands
 * run them through the inline runner.
 */

import { connectionsRecent } from './connections-recent.ts';
import { connectionsReconcile } from './connections-reconcile.ts';
import type { JobDefinition } from './job-definition.ts';
import { legacyFetch } from './legacy-fetch.ts';
import { legacyLatest } from './legacy-latest.ts';
import { legacySync } from './legacy-sync.ts';
import { pushPrune } from './push-prune.ts';
import { recordsBackfill } from './records-backfill.ts';
import { recordsPoll } from './records-poll.ts';
import { recordsRecent } from './records-recent.ts';
import { usersSync } from './users-sync.ts';
import { warehouseMaintain } from './warehouse-maintain.ts';

export const jobCatalog = {
  [usersSync.name]: usersSync,
  [recordsPoll.name]: recordsPoll,
  [recordsBackfill.name]: recordsBackfill,
  [connectionsReconcile.name]: connectionsReconcile,
  [connectionsRecent.name]: connectionsRecent,
  [recordsRecent.name]: recordsRecent,
  [legacySync.name]: legacySync,
  [legacyLatest.name]: legacyLatest,
  [legacyFetch.name]: legacyFetch,
  [pushPrune.name]: pushPrune,
  [warehouseMaintain.name]: warehouseMaintain,
} satisfies Record<string, JobDefinition<any, any>>;

export type JobName = keyof typeof jobCatalog;
