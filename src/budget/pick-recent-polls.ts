/**
 * Which users one records.recent tick enqueues (pure).
 * Why and how: README.md, "`pick-recent-polls.ts`".
 */
import type { UserPollState } from '../warehouse/recent-polls.ts';
import { type BudgetPlan, HOUR_MS } from './plan-request-budget.ts';

export const WINDOW_TICKS = 10;

export interface RecentSlice {
  /** Active users to enqueue (queued at FANOUT_PRIORITIES.activeRecentPoll, jobs/records-recent.ts, before the dormant ones). */
  active: string[];
  dormant: string[];
  due: { active: number; dormant: number };
  inFlight: number;
  /** Users the gate allowed this tick. */
  allowed: number;
}

/** The tick's time frames, from the plan and the tick length alone. */
export interface RecentPollTimes {
  windowMs: number;
  /** A poll queued longer ago than this and not completed is lost (no longer in flight). */
  lostAfterMs: number;
  /** Completed polls this recent tell the slowest queue-to-completion time. */
  horizonMs: number;
  /** Users the recent poll's share allows per window. */
  windowUsers: number;
}

export function recentPollTimes(plan: BudgetPlan, tickMs: number): RecentPollTimes {
  const windowMs = WINDOW_TICKS * tickMs;
  const activePeriod = plan.recent.activePeriodMs ?? Number.POSITIVE_INFINITY;
  const perUser = plan.recent.requestsPerUser;
  return {
    windowMs,
    lostAfterMs: Number.isFinite(activePeriod) ? Math.max(activePeriod, windowMs) : 6 * windowMs,
    horizonMs: Number.isFinite(activePeriod) ? activePeriod : windowMs,
    windowUsers: perUser > 0 ? Math.floor((plan.recentCapPerHour * windowMs) / HOUR_MS / perUser) : 0,
  };
}

/**
 * What the gate needs of the recent polls (of pollable users): the slowest queue-to-completion time of
 * the polls completed within the horizon, the polls in flight, those queued in the window, the last
 * enqueue. `recentPollStats` computes it from a whole list; the tick reads it by aggregate
 * (recent-polls.ts, `readRecentPollStats`, the same definitions in SQL).
 */
export interface RecentPollStats {
  slowestMs: number;
  inFlight: number;
  enqueuedInWindow: number;
  lastEnqueueAt: number | undefined;
}

const isInFlight = (u: UserPollState, now: number, lostAfterMs: number) => {
  const queued = u.enqueuedAt?.getTime();
  const polled = u.polledAt?.getTime();
  return queued !== undefined && (polled === undefined || polled < queued) && now - queued < lostAfterMs;
};

export function recentPollStats(
  users: readonly UserPollState[],
  times: RecentPollTimes,
  now: number,
): RecentPollStats {
  let slowestMs = 0;
  let inFlight = 0;
  let enqueuedInWindow = 0;
  let lastEnqueueAt: number | undefined;
  for (const u of users) {
    const queued = u.enqueuedAt?.getTime();
    const polled = u.polledAt?.getTime();
    if (queued !== undefined && polled !== undefined && polled >= queued && now - polled < times.horizonMs)
      slowestMs = Math.max(slowestMs, polled - queued);
    if (queued !== undefined && now - queued < times.windowMs) enqueuedInWindow++;
    if (queued !== undefined && (lastEnqueueAt === undefined || queued > lastEnqueueAt))
      lastEnqueueAt = queued;
    if (isInFlight(u, now, times.lostAfterMs)) inFlight++;
  }
  return { slowestMs, inFlight, enqueuedInWindow, lastEnqueueAt };
}

/** How many users this tick may queue, and how far ahead of falling due an active user is queued. */
export interface RecentPollGate {
  leadMs: number;
  allowed: number;
  /** A user is due when its last completed poll is at least this old (Infinity: only never-polled users). */
  activeDueAgeMs: number;
  dormantDueAgeMs: number;
}

export function recentPollGate(
  stats: RecentPollStats,
  plan: BudgetPlan,
  times: RecentPollTimes,
  options: { now: number; tickMs: number },
): RecentPollGate {
  const { now, tickMs } = options;
  const { windowMs, windowUsers } = times;
  // An active user is queued `lead` before it falls due, so its poll completes within the period: two
  // ticks (the granularity of queueing, and a tick that runs late) plus the slowest queue-to-completion
  // time of the polls completed in the last active period (measured: it grows with the queue depth, the
  // worker slots and the budget's pace), at most a window.
  const leadMs = 2 * tickMs + Math.min(stats.slowestMs, windowMs);
  // A tick takes what the rate allows since the last enqueue (so a tick that ran late catches up, and
  // there is no burst of a whole window at start), the window at most its share.
  const sinceLast =
    stats.lastEnqueueAt === undefined ? tickMs : Math.min(windowMs, Math.max(0, now - stats.lastEnqueueAt));
  const byRate = Math.ceil((windowUsers * sinceLast) / windowMs);
  const allowed = Math.max(
    0,
    Math.min(byRate, windowUsers - Math.max(stats.enqueuedInWindow, stats.inFlight)),
  );
  const activePeriod = plan.recent.activePeriodMs ?? Number.POSITIVE_INFINITY;
  return {
    leadMs,
    allowed,
    activeDueAgeMs: activePeriod - leadMs,
    dormantDueAgeMs: plan.recent.dormantPeriodMs ?? Number.POSITIVE_INFINITY,
  };
}

/**
 * The slice of `users` to queue this tick. With `stats` (the tick, reading by aggregate and keyset),
 * `users` are the due candidates only, oldest first, at most `allowed` of each kind
 * (recent-polls.ts, `readDueUsers`), and `due` counts among them; without, `users` are every
 * pollable user and the stats are computed from them.
 */
export function pickRecentPolls(
  users: readonly UserPollState[],
  plan: BudgetPlan,
  options: { now: number; tickMs: number },
  stats?: RecentPollStats,
): RecentSlice {
  const { now } = options;
  const times = recentPollTimes(plan, options.tickMs);
  const s = stats ?? recentPollStats(users, times, now);
  const gate = recentPollGate(s, plan, times, options);
  const activeDue: UserPollState[] = [];
  const dormantDue: UserPollState[] = [];
  for (const u of users) {
    if (isInFlight(u, now, times.lostAfterMs)) continue;
    const polled = u.polledAt?.getTime();
    const age = polled === undefined ? Number.POSITIVE_INFINITY : now - polled;
    if (u.active) {
      if (age >= gate.activeDueAgeMs) activeDue.push(u);
    } else if (age >= gate.dormantDueAgeMs) dormantDue.push(u);
  }
  const oldestFirst = (a: UserPollState, b: UserPollState) =>
    (a.polledAt?.getTime() ?? -1) - (b.polledAt?.getTime() ?? -1) ||
    (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
  activeDue.sort(oldestFirst);
  dormantDue.sort(oldestFirst);
  const { allowed } = gate;
  const active = activeDue.slice(0, allowed);
  const dormant = dormantDue.slice(0, allowed - active.length);
  return {
    active: active.map((u) => u.uid),
    dormant: dormant.map((u) => u.uid),
    due: { active: activeDue.length, dormant: dormantDue.length },
    inFlight: s.inFlight,
    allowed,
  };
}
