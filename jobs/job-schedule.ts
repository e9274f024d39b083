/**
 * Every job's place in the one queue, side by side: its priority (lower runs first, BullMQ's) and its
 * retry class (JOB_RETRIES, src/queue/job-definition.ts). Priorities only mean something against each
 * other, so they are read here in one table, not one per job file; `defineJob` (job-context.ts) gives
 * each definition its row. src/queue/README.md ("Queue and priorities") lists the same order (a test
 * holds the two together).
 */
import type { RetryClass } from '../src/queue/job-definition.ts';

export const JOB_SCHEDULE = {
  'users.sync': { priority: 5, retry: 'fetch' },
  /** One or two requests, and what it finds is data the stream lost. */
  'streams.reconcile': { priority: 6, retry: 'fetch' },
  /** The tick is one read of the warehouse: it goes before the polls it queues, so it runs on time. */
  'records.recent': { priority: 7, retry: 'plan' },
  /** Like the recent tick: a few statements that queue push fetches within push's share. */
  'push.drain': { priority: 7, retry: 'plan' },
  'connections.recent': { priority: 8, retry: 'plan' },
  /** Reconciliation goes before backfill work. */
  'connections.reconcile': { priority: 10, retry: 'fetch' },
  /**
   * Push is about latency: before the recent poll and backfills. push.drain queues these only within
   * push's share of the request budget, so this priority cannot starve the kinds below it.
   */
  'legacy.fetch': { priority: 10, retry: 'fetch' },
  'records.poll': { priority: 20, retry: 'fetch' },
  'legacy.latest': { priority: 20, retry: 'fetch' },
  'legacy.sync': { priority: 25, retry: 'plan' },
  'records.backfill': { priority: 30, retry: 'plan' },
  /**
   * The completeness audit: last of the platform work (a tick audits only its planned share of the hour;
   * a command run's cells wait behind everything that keeps the warehouse fresh).
   */
  'records.audit': { priority: 40, retry: 'fetch' },
  'push.prune': { priority: 50, retry: 'housekeeping' },
  'warehouse.maintain': { priority: 50, retry: 'housekeeping' },
} as const satisfies Record<string, { priority: number; retry: RetryClass }>;

export type ScheduledJobName = keyof typeof JOB_SCHEDULE;
