/**
 * Which users one records.recent tick enqueues (pure).
 * Why and how: README.md, "`pick-recent-polls.ts`".
 */
import type { PollableUser } from '../warehouse/select-users-to-poll.ts';
import { type BudgetPlan, HOUR_MS } from './plan-request-budget.ts';

export const WINDOW_TICKS = 10;

export interface RecentSlice {
  /** Active users to enqueue (queued at FANOUT_PRIORITIES.activeRecentPoll, job-priorities.ts, before the dormant ones). */
  active: string[];
  dormant: string[];
  due: { active: number; dormant: number };
  inFlight: number;
  /** Users the gate allowed this tick. */
  allowed: number;
}

export function pickRecentPolls(
  users: readonly PollableUser[],
  plan: BudgetPlan,
  options: { now: number; tickMs: number },
): RecentSlice {
  const { now, tickMs } = options;
  const windowMs = WINDOW_TICKS * tickMs;
  const activePeriod = plan.recent.activePeriodMs ?? Number.POSITIVE_INFINITY;
  const dormantPeriod = plan.recent.dormantPeriodMs ?? Number.POSITIVE_INFINITY;
  const lostAfter = Number.isFinite(activePeriod) ? Math.max(activePeriod, windowMs) : 6 * windowMs;
  const perUser = plan.recent.requestsPerUser;
  const windowUsers = perUser > 0 ? Math.floor((plan.recentCapPerHour * windowMs) / HOUR_MS / perUser) : 0;

  // An active user is queued `lead` before it falls due, so its poll completes within the period: two
  // ticks (the granularity of queueing, and a tick that runs late) plus the slowest queue-to-completion
  // time of the polls completed in the last active period (measured: it grows with the queue depth, the
  // worker slots and the budget's pace), at most a window.
  const horizon = Number.isFinite(activePeriod) ? activePeriod : windowMs;
  let slowest = 0;
  for (const u of users) {
    const queued = u.enqueuedAt?.getTime();
    const polled = u.polledAt?.getTime();
    if (queued !== undefined && polled !== undefined && polled >= queued && now - polled < horizon)
      slowest = Math.max(slowest, polled - queued);
  }
  const lead = 2 * tickMs + Math.min(slowest, windowMs);
  let inFlight = 0;
  let enqueuedInWindow = 0;
  let lastEnqueue: number | undefined;
  const activeDue: PollableUser[] = [];
  const dormantDue: PollableUser[] = [];
  for (const u of users) {
    const queued = u.enqueuedAt?.getTime();
    const polled = u.polledAt?.getTime();
    if (queued !== undefined && now - queued < windowMs) enqueuedInWindow++;
    if (queued !== undefined && (lastEnqueue === undefined || queued > lastEnqueue)) lastEnqueue = queued;
    if (queued !== undefined && (polled === undefined || polled < queued) && now - queued < lostAfter) {
      inFlight++;
      continue;
    }
    const age = polled === undefined ? Number.POSITIVE_INFINITY : now - polled;
    if (u.active) {
      if (age >= activePeriod - lead) activeDue.push(u);
    } else if (age >= dormantPeriod) dormantDue.push(u);
  }
  const oldestFirst = (a: PollableUser, b: PollableUser) =>
    (a.polledAt?.getTime() ?? -1) - (b.polledAt?.getTime() ?? -1) ||
    (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
  activeDue.sort(oldestFirst);
  dormantDue.sort(oldestFirst);
  // A tick takes what the rate allows since the last enqueue (so a tick that ran late catches up, and
  // there is no burst of a whole window at start), the window at most its share.
  const sinceLast = lastEnqueue === undefined ? tickMs : Math.min(windowMs, Math.max(0, now - lastEnqueue));
  const byRate = Math.ceil((windowUsers * sinceLast) / windowMs);
  const allowed = Math.max(0, Math.min(byRate, windowUsers - Math.max(enqueuedInWindow, inFlight)));
  const active = activeDue.slice(0, allowed);
  const dormant = dormantDue.slice(0, allowed - active.length);
  return {
    active: active.map((u) => u.uid),
    dormant: dormant.map((u) => u.uid),
    due: { active: activeDue.length, dormant: dormantDue.length },
    inFlight,
    allowed,
  };
}
