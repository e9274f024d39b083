/**
 * The plan said out loud (pure): what `status` (under each org as `budget`) and `/metrics` show of an
 * org's budget plan, plus the one thing measured rather than planned: how long ago the least recently
 * polled active user was polled (the sweep period actually achieved, once a first sweep is done).
 */
import type { BudgetPlan, WorkKind } from './plan-request-budget.ts';
import type { OrgBudget } from './read-budget-plan.ts';
import type { RecentPollMode } from './recent-poll-mode.ts';

/** The plan's own figures as they are, and the recent poll's described for people. */
export interface BudgetStatus
  extends Pick<BudgetPlan, 'requestsPerHour' | 'usablePerHour' | 'perHour' | 'shares' | 'overcommitted'> {
  recentPoll: {
    /** 'fallback' (stream-first: polls only while the stream is down), 'always', or 'off'. */
    mode: RecentPollMode['mode'];
    /** Whether the tick queues polls now, why, and over how many days. */
    polling: boolean;
    reason: string;
    days: number;
    /** Seconds since the org's primary stream was last heard from (null: never). */
    streamLastHeardSeconds: number | null;
    activeUsers: number;
    dormantUsers: number;
    requestsPerUser: number;
    /** Requests per hour the configured periods would need. */
    demandPerHour: number;
    /** Sweep periods in seconds: configured, and what the plan achieves (null: never). */
    configuredSeconds: number;
    plannedSeconds: number | null;
    configuredDormantSeconds: number;
    plannedDormantSeconds: number | null;
    /** Measured: age of the oldest completed poll among active users (null if one was never polled). */
    oldestActivePollSeconds: number | null;
    activeNeverPolled: number;
  };
  /** Push-triggered fetches: their share and the durable queue (validic_sync.push_fetches). */
  push?: {
    /** Requests per hour: the most push may take, what it asks (last hour + backlog), what is planned. */
    capPerHour: number;
    demandPerHour: number;
    plannedPerHour: number;
    /** Fetches waiting (of them due now), queued as jobs, failed (kept until pruned). */
    pending: number;
    due: number;
    queued: number;
    failed: number;
    /** Age of the oldest pending fetch's first item, seconds (null: nothing pending). */
    oldestPendingSeconds: number | null;
    /** Requests claimed and fetches finished in the last hour. */
    requestsLastHour: number;
    doneLastHour: number;
    /** Notifications refused (429) at the per-minute cap in the last hour, and in how many minutes. */
    refusedLastHour: number;
    refusedMinutesLastHour: number;
  };
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const seconds = (ms: number | null) => (ms === null ? null : round(ms / 1000));

export function describeBudget(budget: OrgBudget, now: number): BudgetStatus {
  const { plan, users, push, recentPoll: mode } = budget;
  const { activeNeverPolled } = users;
  const oldest = Math.min(now, users.oldestActivePolledAt?.getTime() ?? now);
  const r = plan.recent;
  const map = <T>(o: Record<WorkKind, number>, f: (n: number) => T) =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)])) as Record<WorkKind, T>;
  return {
    requestsPerHour: plan.requestsPerHour,
    usablePerHour: round(plan.usablePerHour),
    perHour: map(plan.perHour, (n) => round(n)),
    shares: map(plan.shares, (n) => round(n, 3)),
    overcommitted: plan.overcommitted,
    recentPoll: {
      mode: mode.mode,
      polling: mode.polling,
      reason: mode.reason,
      days: mode.days,
      streamLastHeardSeconds:
        mode.streamLastHeardAt === null
          ? null
          : seconds(Math.max(0, now - Date.parse(mode.streamLastHeardAt))),
      activeUsers: r.activeUsers,
      dormantUsers: r.dormantUsers,
      requestsPerUser: r.requestsPerUser,
      demandPerHour: round(r.demandPerHour),
      configuredSeconds: seconds(r.configuredActivePeriodMs)!,
      plannedSeconds: seconds(r.activePeriodMs),
      configuredDormantSeconds: seconds(r.configuredDormantPeriodMs)!,
      plannedDormantSeconds: seconds(r.dormantPeriodMs),
      oldestActivePollSeconds: users.active > 0 && activeNeverPolled === 0 ? seconds(now - oldest) : null,
      activeNeverPolled,
    },
    ...(push
      ? {
          push: {
            capPerHour: round(push.capPerHour),
            demandPerHour: round(push.demandPerHour),
            plannedPerHour: round(push.perHour),
            pending: push.backlog.pending,
            due: push.backlog.due,
            queued: push.backlog.queued,
            failed: push.backlog.failed,
            oldestPendingSeconds:
              push.backlog.oldestPendingAt === null
                ? null
                : seconds(Math.max(0, now - push.backlog.oldestPendingAt)),
            requestsLastHour: push.backlog.claimedLastHour,
            doneLastHour: push.backlog.doneLastHour,
            refusedLastHour: push.backlog.refusedLastHour,
            refusedMinutesLastHour: push.backlog.refusedMinutesLastHour,
          },
        }
      : {}),
  };
}
