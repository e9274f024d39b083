/**
 * BullMQ options of one job, derived from its definition (pure). Jobs with a deterministic id are removed
 * from Redis once they complete: the id only has to keep the same unit of work from being queued twice
 * while it waits or runs; what is done for good is remembered in Postgres (ledger, cursors), and a later
 * schedule tick must be able to queue the same window again.
 */
import type { JobsOptions } from 'bullmq';
import { type JobDefinition, retryOptionsOf } from './job-definition.ts';

export interface KeepJobs {
  /** Completed jobs without a deterministic id kept for inspection. */
  keepCompleted: number;
  /** Failed jobs kept (for at most 7 days). */
  keepFailed: number;
}

const DAY_S = 86_400;

/** BullMQ rejects ':' in custom ids (it separates key parts); definitions use '|'. */
export function toBullJobId(id: string): string {
  return id.replaceAll(':', '%3A');
}

export function jobOptions(
  definition: JobDefinition,
  payload: unknown,
  keep: KeepJobs,
  extra: { delayMs?: number; priority?: number } = {},
): JobsOptions {
  const key = definition.jobId?.(payload);
  const id = key === undefined ? undefined : toBullJobId(key);
  const priority = extra.priority ?? definition.priority;
  const retry = retryOptionsOf(definition);
  return {
    ...(id ? { jobId: id } : {}),
    attempts: retry.attempts,
    backoff: retry.backoff,
    priority,
    ...(extra.delayMs ? { delay: extra.delayMs } : {}),
    removeOnComplete: id ? true : { count: keep.keepCompleted, age: DAY_S },
    removeOnFail: { count: keep.keepFailed, age: 7 * DAY_S },
  };
}
