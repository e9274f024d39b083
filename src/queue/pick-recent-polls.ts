/**
 * Which users one records.recent tick enqueues (pure). The sweep is spread over its period instead of
 * queued at once: a tick enqueues only what the plan's recent-poll rate allows, and
 *
 * - due: an active user whose last completed poll is older than the plan's active period, a dormant one
 *   older than the dormant period, or one never polled; a user whose poll is still in flight is not due;
 * - order: active users first (they are the ones whose data is late), then the oldest poll first;
 * - gate: over any sliding window of `WINDOW_TICKS` ticks, at most the recent cap's worth of users is
 *   enqueued, and no more are in flight than that: the recent poll never takes more than its share of
 *   the budget (so backfill keeps its minimum), and never queues more than the budget can serve.
 *
 * A poll in flight (queued after its last completion) that has not completed within one active period
 * is taken as lost and becomes due again; records.poll's deterministic id keeps it from being doubled
 * should it still wait in the queue.
 */
import type { PollableUser } from '../warehouse/select-users-to-poll.ts';
import { type BudgetPlan, HOUR_MS } from './plan-request-budget.ts';

export const WINDOW_TICKS = 10;

export interface RecentSlice {
  uids: string[];
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

  let inFlight = 0;
  let enqueuedInWindow = 0;
  const due: PollableUser[] = [];
  for (const u of users) {
    const queued = u.enqueuedAt?.getTime();
    const polled = u.polledAt?.getTime();
    if (queued !== undefined && now - queued < windowMs) enqueuedInWindow++;
    if (queued !== undefined && (polled === undefined || polled < queued) && now - queued < lostAfter) {
      inFlight++;
      continue;
    }
    if (polled === undefined || now - polled >= (u.active ? activePeriod : dormantPeriod)) due.push(u);
  }
  due.sort(
    (a, b) =>
      Number(b.active) - Number(a.active) ||
      (a.polledAt?.getTime() ?? -1) - (b.polledAt?.getTime() ?? -1) ||
      (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0),
  );
  const allowed = Math.max(0, windowUsers - Math.max(enqueuedInWindow, inFlight));
  return {
    uids: due.slice(0, allowed).map((u) => u.uid),
    due: { active: due.filter((u) => u.active).length, dormant: due.filter((u) => !u.active).length },
    inFlight,
    allowed,
  };
}
