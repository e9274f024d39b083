/**
 * The job catalog: every job module by name. The worker registers these with BullMQ; one-shot commands
 * run them through the inline runner.
 */
import { connectionsReconcile } from './connections-reconcile.ts';
import type { JobDefinition } from './job-definition.ts';
import { recordsBackfill } from './records-backfill.ts';
import { recordsPoll } from './records-poll.ts';
import { usersSync } from './users-sync.ts';

export const jobCatalog = {
  [usersSync.name]: usersSync,
  [recordsPoll.name]: recordsPoll,
  [recordsBackfill.name]: recordsBackfill,
  [connectionsReconcile.name]: connectionsReconcile,
} satisfies Record<string, JobDefinition<any, any>>;

export type JobName = keyof typeof jobCatalog;
