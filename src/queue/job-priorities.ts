/**
 * The one table of job priorities (BullMQ: lower runs first). Every job definition takes its priority
 * from here, and the queue README's list is tested against it (test/unit/queue-priorities-readme.test.ts).
 * Why this order: the user list and the recent tick are cheap and keep everything else fed; reconciliation
 * and push fetches are about latency; backfill is bulk work that takes what is left; housekeeping last.
 */
export const JOB_PRIORITIES = {
  'users.sync': 5,
  /** A pass of the reconciliation stream: one request, and what it finds is data the stream lost. */
  'streams.reconcile': 6,
  /** The tick is one read of the warehouse: it goes before the polls it queues, so it runs on time. */
  'records.recent': 7,
  /** Like the recent tick: a few statements that queue push fetches within push's share. */
  'push.drain': 7,
  'connections.recent': 8,
  /** Reconciliation goes before backfill work. */
  'connections.reconcile': 10,
  /**
   * Push is about latency: before the recent poll and backfills. push.drain queues these only within
   * push's share of the request budget, so this priority cannot starve the kinds below it.
   */
  'legacy.fetch': 10,
  'records.poll': 20,
  'legacy.latest': 20,
  'legacy.sync': 25,
  'records.backfill': 30,
  /**
   * The completeness audit: last of the platform work (a tick audits only its planned share of the hour;
   * a command run's cells wait behind everything that keeps the warehouse fresh).
   */
  'records.audit': 40,
  'push.prune': 50,
  'warehouse.maintain': 50,
} as const satisfies Record<string, number>;

/**
 * Priorities a job sets on its fan-out (`ctx.enqueue(name, payload, { priority })`): the records.recent
 * tick queues active users' polls before dormant users', and both before backfill polls (20).
 */
export const FANOUT_PRIORITIES = {
  activeRecentPoll: 11,
  dormantRecentPoll: 12,
} as const satisfies Record<string, number>;
