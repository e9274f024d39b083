/**
 * records.recent: the tick of the scheduled recent poll (every `budget.tickSeconds`).
 *
 * Stream-first: while the org's primary stream is heard from, the stream delivers what this poll would
 * re-read, so by default (`sync.recentPoll` `fallback`) the tick queues nothing and says why once. When
 * the stream has been unheard for `budget.streamFallbackMinutes`, or was never heard, or its resource
 * filter leaves a polled resource out (src/budget/recent-poll.ts), each user's outage days (at most
 * `sync.lookbackDays`, plus today) are re-polled, all configured resources, as a records.poll job without
 * a backfill run. `sync.recentPoll` `always` re-polls the whole lookback on schedule, whatever the stream
 * does. The tick logs when the poll goes on (a warning, in fallback) or off.
 *
 * Instead of queueing every user at once each period, each tick reads the org's budget plan
 * (src/budget/read-budget-plan.ts) and enqueues only the next slice of due users, oldest poll first,
 * active users before dormant ones, as far as the recent poll's share of the request budget allows
 * (src/budget/read-budget-plan.ts). The users come from `readUserPollStates`, the one selection of
 * pollable users. Each user's last enqueue is written before the enqueue (validic_sync.recent_polls);
 * records.poll writes the completion.
 *
 * A rolling range of at most 30 days is one window per user × resource, so nothing is planned in the
 * ledger; the loader makes repeats no-ops, and records.poll's deterministic id keeps a window from being
 * queued twice while one waits.
 *
 * The first sync (src/budget/first-sync.ts) comes before all of that: once the stream has been heard,
 * the tick begins it (validic_sync.first_syncs) and, until it is complete, queues the next users it has
 * not covered, in uid order from where it left off, over its days, as far as the same gate allows; their
 * polls carry `firstSync` (the stream's name), so records.poll records each window it completes. When
 * the keyset has passed the last user, the tick starts over from the first (users whose poll was in
 * flight, failed or lost), and marks the first sync complete once a users listing has been read to its
 * end and no pollable user is left uncovered.
 */

import { z } from 'zod';
import { firstSyncRange, firstSyncWindows } from '../src/budget/first-sync.ts';
import { budgetWarnings } from '../src/budget/plan-request-budget.ts';
import type { OrgBudget } from '../src/budget/read-budget-plan.ts';
import { recentPollWindows } from '../src/budget/recent-poll.ts';
import { jobKey } from '../src/queue/job-definition.ts';
import { MAX_REQUEST_WINDOW_DAYS, toV2Resource } from '../src/validic/platform-limits.ts';
import { usersFullSyncCursor } from '../src/warehouse/cursors.ts';
import { type CatalogJobContext, defineJob } from './job-context.ts';
import { syncUsers } from './users-sync.ts';

/** The payload: what one run of this job is given. */
export const recordsRecentPayload = z.object({
  orgId: z.string().min(1),
  /** Days back from today; default: what the recent poll's mode asks for (src/budget/recent-poll.ts). */
  lookbackDays: z.number().int().min(0).max(MAX_REQUEST_WINDOW_DAYS).optional(),
});

/**
 * Priorities the tick sets on its fan-out (`ctx.enqueue(name, payload, { priority })`): active users'
 * polls before dormant users', and both before backfill polls (records.poll, 20).
 */
export const FANOUT_PRIORITIES = {
  activeRecentPoll: 11,
  dormantRecentPoll: 12,
} as const satisfies Record<string, number>;

export interface RecordsRecentResult {
  /** Whether this tick polled, and why (stream-first: only while the stream is down). */
  polling: boolean;
  reason: string;
  from: string | null;
  to: string | null;
  users: number;
  active: number;
  enqueued: number;
  inFlight: number;
  /** The first sync's progress, when this tick worked on it. */
  firstSync?: { streamName: string; users: number; completed: boolean };
}

/** Warnings already logged by this process ("once"), by org and kind. */
const warned = new Set<string>();
/** The last reason the recent poll was on or off, by org: logged when it changes. */
const lastMode = new Map<string, string>();

export const recordsRecent = defineJob({
  name: 'records.recent',
  payload: recordsRecentPayload,
  jobId: (p) => jobKey('records.recent', p.orgId),
  async run(ctx, payload): Promise<RecordsRecentResult> {
    const org = ctx.org(payload.orgId);
    const now = Date.now();
    // A fresh warehouse's first statistics, before the plan's counts run without them (warehouse-upkeep.ts).
    const analyzed = await ctx.warehouse.analyzeNewTables();
    if (analyzed.length > 0) ctx.log.info({ tables: analyzed }, 'first statistics of newly loaded tables');
    let budget = await ctx.readBudgetPlan(payload.orgId, now);
    const mode = budget.recentPoll;
    if (lastMode.get(payload.orgId) !== mode.reason) {
      // Said when it changes, not every tick; a fallback poll means the stream is down: a warning.
      const level = mode.polling && mode.mode === 'fallback' && !mode.firstSync ? 'warn' : 'info';
      ctx.log[level](
        { orgId: payload.orgId, ...mode },
        `recent poll ${mode.polling ? 'on' : 'off'}: ${mode.reason}`,
      );
      lastMode.set(payload.orgId, mode.reason);
    }
    if (!mode.polling) {
      return {
        polling: false,
        reason: mode.reason,
        from: null,
        to: null,
        users: budget.users.pollable,
        active: budget.plan.recent.activeUsers,
        enqueued: 0,
        inFlight: 0,
      };
    }
    // First tick of a fresh warehouse (the users schedule may not have run yet): read the users first.
    if (budget.users.pollable === 0) {
      await syncUsers(ctx, payload.orgId);
      budget = await ctx.readBudgetPlan(payload.orgId, now);
    }
    for (const warning of budgetWarnings(budget.plan, ctx.settings.lookbackDays)) {
      const key = `${payload.orgId}|${warning.kind}`;
      if (warned.has(key)) continue;
      warned.add(key);
      ctx.log.warn({ orgId: payload.orgId, budget: budget.plan.perHour }, warning.message);
    }
    if (mode.firstSync) return firstSyncTick(ctx, payload.orgId, budget, now);
    // An explicit lookback wins; otherwise the days the mode asks for (the outage's, in fallback).
    const days = payload.lookbackDays ?? mode.days;
    // The days are the platform's (its clock, not the worker's: src/time/platform-clock.ts).
    const windows = recentPollWindows(days, ctx.platformClock.now());
    // Only now, while polling, are users read: the due ones the plan allows this tick, by keyset.
    const slice = await budget.readSlice({ tickMs: ctx.settings.tickMs });
    const resources = [...new Set(org.resources.map(toV2Resource))];
    await ctx.warehouse.markRecentPollsEnqueued(
      payload.orgId,
      [...slice.active, ...slice.dormant],
      new Date(now),
    );
    let enqueued = 0;
    for (const [uids, priority] of [
      [slice.active, FANOUT_PRIORITIES.activeRecentPoll],
      [slice.dormant, FANOUT_PRIORITIES.dormantRecentPoll],
    ] as const) {
      for (const uid of uids) {
        for (const window of windows) {
          ctx.signal.throwIfAborted();
          const poll = { orgId: payload.orgId, uid, resources, recent: true, ...window };
          if (await ctx.enqueue('records.poll', poll, { priority })) enqueued++;
        }
      }
    }
    return {
      polling: true,
      reason: mode.reason,
      from: windows[0]!.startDate,
      to: windows.at(-1)!.endDate,
      users: budget.users.pollable,
      active: budget.plan.recent.activeUsers,
      enqueued,
      inFlight: slice.inFlight,
    };
  },
});

/**
 * One tick of the first sync: begin it (the stream has been heard), queue the next users it has not
 * covered over its days, move its keyset on, and once the keyset has passed the last user, mark it complete
 * if a complete users listing has been read and every pollable user is covered.
 */
async function firstSyncTick(
  ctx: CatalogJobContext,
  orgId: string,
  budget: OrgBudget,
  now: number,
): Promise<RecordsRecentResult> {
  const { streamName } = budget;
  const sync =
    budget.firstSync ??
    (await ctx.warehouse.beginFirstSync({
      orgId,
      streamName,
      ...firstSyncRange(ctx.settings.lookbackDays, now),
      at: new Date(now),
    }));
  if (!budget.firstSync)
    ctx.log.info(
      { orgId, streamName, from: sync.from, to: sync.to },
      'first sync begun: the stream is heard; every user is polled over these days once',
    );
  const windows = firstSyncWindows(sync);
  const slice = await budget.readFirstSyncSlice({ tickMs: ctx.settings.tickMs, sync, windows });
  const resources = [...new Set(ctx.org(orgId).resources.map(toV2Resource))];
  await ctx.warehouse.markRecentPollsEnqueued(orgId, slice.uids, new Date(now));
  let enqueued = 0;
  for (const uid of slice.uids) {
    for (const window of windows) {
      ctx.signal.throwIfAborted();
      const poll = { orgId, uid, resources, recent: true, firstSync: streamName, ...window };
      if (await ctx.enqueue('records.poll', poll, { priority: FANOUT_PRIORITIES.activeRecentPoll }))
        enqueued++;
    }
  }
  let completed = false;
  if (slice.uids.length > 0 || slice.reachedEnd)
    await ctx.warehouse.moveFirstSyncOn(orgId, streamName, slice.reachedEnd ? null : slice.uids.at(-1)!);
  if (slice.reachedEnd) completed = await completeIfCovered(ctx, orgId, streamName, windows, now);
  return {
    polling: true,
    reason: budget.recentPoll.reason,
    from: windows[0]?.startDate ?? null,
    to: windows.at(-1)?.endDate ?? null,
    users: budget.users.pollable,
    active: budget.plan.recent.activeUsers,
    enqueued,
    inFlight: slice.inFlight,
    firstSync: { streamName, users: slice.uids.length, completed },
  };
}

/** Marks the first sync complete when a users listing has been read to its end and nobody is left. */
async function completeIfCovered(
  ctx: CatalogJobContext,
  orgId: string,
  streamName: string,
  windows: ReturnType<typeof firstSyncWindows>,
  now: number,
): Promise<boolean> {
  // Until a listing has been complete, users the platform has may not be stored (and so not polled) yet.
  if (!(await ctx.cursors.read(orgId, usersFullSyncCursor()))) return false;
  const { pollable, pending } = await ctx.warehouse.countFirstSyncUsers(orgId, streamName, windows);
  if (pending > 0) return false;
  const done = await ctx.warehouse.completeFirstSync({
    orgId,
    streamName,
    at: new Date(now),
    usersCovered: pollable,
  });
  if (done)
    ctx.log.info(
      { orgId, streamName, users: pollable, from: windows[0]?.startDate, to: windows.at(-1)?.endDate },
      'first sync complete: every user was polled since the stream was first heard; the recent poll now follows sync.recentPoll',
    );
  return done;
}

declare module '../src/queue/job-catalog.ts' {
  interface Jobs {
    'records.recent': { payload: typeof recordsRecentPayload; job: typeof recordsRecent };
  }
}
