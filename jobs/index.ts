/**
 * The job catalog: every job module by name. The worker registers these with BullMQ; one-shot commands
 * run them through the inline runner.
 */

import type { JobDefinition } from '../src/queue/job-definition.ts';
import { connectionsRecent } from './connections-recent.ts';
import { connectionsReconcile } from './connections-reconcile.ts';
import { legacyFetch } from './legacy-fetch.ts';
import { legacyLatest } from './legacy-latest.ts';
import { legacySync } from './legacy-sync.ts';
import type { JobPayloads } from './payloads.ts';
import { pushDrain } from './push-drain.ts';
import { pushPrune } from './push-prune.ts';
import { recordsAudit } from './records-audit.ts';
import { recordsBackfill } from './records-backfill.ts';
import { recordsPoll } from './records-poll.ts';
import { recordsRecent } from './records-recent.ts';
import { streamsReconcile } from './streams-reconcile.ts';
import { usersSync } from './users-sync.ts';
import { warehouseMaintain } from './warehouse-maintain.ts';

export const jobCatalog = {
  [usersSync.name]: usersSync,
  [recordsPoll.name]: recordsPoll,
  [recordsBackfill.name]: recordsBackfill,
  [streamsReconcile.name]: streamsReconcile,
  [connectionsReconcile.name]: connectionsReconcile,
  [connectionsRecent.name]: connectionsRecent,
  [recordsRecent.name]: recordsRecent,
  [legacySync.name]: legacySync,
  [legacyLatest.name]: legacyLatest,
  [legacyFetch.name]: legacyFetch,
  [recordsAudit.name]: recordsAudit,
  [pushDrain.name]: pushDrain,
  [pushPrune.name]: pushPrune,
  [warehouseMaintain.name]: warehouseMaintain,
  // Exactly the jobs of JobPayloads (payloads.ts, what ctx.enqueue is typed by), each with its schema.
} satisfies {
  [Name in keyof JobPayloads]: JobDefinition<JobPayloads[Name], any, JobPayloads> & { name: Name };
};
