/**
 * records.recent: the tick of the scheduled recent poll (every `budget.tickSeconds`).
 * Why and how: README.md, "`records-recent.ts`".
 */
import { budgetWarnings } from '../src/queue/budget-warnings.ts';
import { jobKey } from '../src/queue/job-key.ts';
import { FANOUT_PRIORITIES, JOB_PRIORITIES } from '../src/queue/job-priorities.ts';
import { JOB_RETRIES } from '../src/queue/job-retries.ts';
import { pickRecentPolls } from '../src/queue/pick-recent-polls.ts';
import { recentPollWindows } from '../src/queue/recent-poll-windows.ts';
import { toV2Resource } from '../src/validic/v2-resources.ts';
import { defineJob } from './define-job.ts';
import { recordsRecentPayload } from './payloads.ts';
import { syncUsers } from './users-sync.ts';

export interface RecordsRecentResult {
  from: string;
  to: string;
  users: number;
  active: number;
  enqueued: number;
  inFlight: number;
}

/** Warnings already logged by this process ("once"), by org and kind. */
const warned = new Set<string>();

export const recordsRecent = defineJob({
  name: 'records.recent',
  payload: recordsRecentPayload,
  options: { ...JOB_RETRIES.plan, priority: JOB_PRIORITIES['records.recent'] },
  jobId: (p) => jobKey('records.recent', p.orgId),
  async run(ctx, payload): Promise<RecordsRecentResult> {
    const org = ctx.org(payload.orgId);
    const days = payload.lookbackDays ?? ctx.settings.lookbackDays;
    const now = Date.now();
    const windows = recentPollWindows(days, now);
    let budget = await ctx.readBudgetPlan(payload.orgId, now);
    // First tick of a fresh warehouse (the users schedule may not have run yet): read the users first.
    if (budget.users.length === 0) {
      await syncUsers(ctx, payload.orgId);
      budget = await ctx.readBudgetPlan(payload.orgId, now);
    }
    for (const warning of budgetWarnings(budget.plan, ctx.settings.lookbackDays)) {
      const key = `${payload.orgId}|${warning.kind}`;
      if (warned.has(key)) continue;
      warned.add(key);
      ctx.log.warn({ orgId: payload.orgId, budget: budget.plan.perHour }, warning.message);
    }
    const slice = pickRecentPolls(budget.users, budget.plan, {
      now,
      tickMs: ctx.settings.tickMs,
    });
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
      from: windows[0]!.startDate,
      to: windows.at(-1)!.endDate,
      users: budget.users.length,
      active: budget.plan.recent.activeUsers,
      enqueued,
      inFlight: slice.inFlight,
    };
  },
});
