/**
 * The records.recent tick's choice, simulated over hours of ticks with polls that complete one tick
 * later: no window of ticks enqueues more users than the recent poll's share allows (so backfill keeps
 * its minimum), and every active user is polled again within the planned sweep period (plus one tick),
 * dormant users within theirs, once the first sweep is through.
 */
import { describe, expect, it } from 'vitest';
import { type BudgetPlanInput, HOUR_MS, planRequestBudget } from '../../src/budget/plan-request-budget.ts';
import { pickRecentPolls, WINDOW_TICKS } from '../../src/budget/read-budget-plan.ts';
import type { UserPollState } from '../../src/warehouse/recent-polls.ts';

const TICK = 60_000;

/** A plan at 2,000 requests per hour (1,880 usable), 7 requests per user, active users hourly. */
const planOf = (
  recent: Partial<BudgetPlanInput['recent']> & { activeUsers: number; dormantUsers: number },
  reserved: Partial<BudgetPlanInput> = {},
) =>
  planRequestBudget({
    requestsPerHour: 2000,
    usablePerHour: 1880,
    streamPerHour: 0,
    pushAndReconcilePerHour: 0,
    backfillMinShare: 0.1,
    ...reserved,
    recent: { requestsPerUser: 7, activePeriodMs: HOUR_MS, dormantPeriodMs: 24 * HOUR_MS, ...recent },
  });

function simulate(active: number, dormant: number, hours: number) {
  const users: UserPollState[] = Array.from({ length: active + dormant }, (_, i) => ({
    uid: `u${String(i).padStart(5, '0')}`,
    active: i < active,
    enqueuedAt: null,
    polledAt: null,
  }));
  const plan = planOf(
    { activeUsers: active, dormantUsers: dormant },
    { streamPerHour: 12, pushAndReconcilePerHour: 4 },
  );
  const polls = new Map<string, number[]>(users.map((u) => [u.uid, []]));
  const enqueuedAt: number[] = [];
  let pending: UserPollState[] = [];
  const start = Date.UTC(2026, 0, 1);
  for (let now = start; now < start + hours * HOUR_MS; now += TICK) {
    for (const u of pending) {
      u.polledAt = new Date(now); // completed since the last tick
      polls.get(u.uid)!.push(now);
    }
    const slice = pickRecentPolls(users, plan, { now, tickMs: TICK });
    expect(slice.inFlight).toBe(0);
    const picked = new Set([...slice.active, ...slice.dormant]);
    pending = users.filter((u) => picked.has(u.uid));
    for (const u of pending) {
      u.enqueuedAt = new Date(now);
      enqueuedAt.push(now);
    }
  }
  return { plan, polls, enqueuedAt, start };
}

describe('pickRecentPolls', () => {
  it('stays within the recent share and covers every active user within the planned period', () => {
    const hours = 8;
    const { plan, polls, enqueuedAt, start } = simulate(150, 2850, hours);
    const period = plan.recent.activePeriodMs!;
    expect(plan.recent.stretch).toBeGreaterThan(1); // the configuration does not fit: the test is about stretching
    // The gate: any window of WINDOW_TICKS ticks enqueues at most the recent cap's worth of users.
    const windowUsers = (plan.recentCapPerHour * WINDOW_TICKS * TICK) / HOUR_MS / 7;
    for (let i = 0; i < enqueuedAt.length; i++) {
      const inWindow = enqueuedAt.filter(
        (t) => t >= enqueuedAt[i]! && t < enqueuedAt[i]! + WINDOW_TICKS * TICK,
      );
      expect(inWindow.length).toBeLessThanOrEqual(windowUsers);
    }
    // Requests of the recent poll per hour never exceed its share.
    expect((enqueuedAt.length * 7) / hours).toBeLessThanOrEqual(plan.recentCapPerHour);
    // Spread, not a burst: the busiest tick holds a small slice.
    const perTick = new Map<number, number>();
    for (const t of enqueuedAt) perTick.set(t, (perTick.get(t) ?? 0) + 1);
    expect(Math.max(...perTick.values())).toBeLessThanOrEqual(windowUsers);
    // Every active user: polled within the first period, then again at most a period (+ a tick of
    // enqueue and one of completion) after the last.
    for (const [uid, times] of polls) {
      if (Number(uid.slice(1)) >= 150) continue;
      expect(times[0]! - start).toBeLessThanOrEqual(period);
      for (let k = 1; k < times.length; k++)
        expect(times[k]! - times[k - 1]!).toBeLessThanOrEqual(period + 2 * TICK);
      expect(start + hours * HOUR_MS - times.at(-1)!).toBeLessThanOrEqual(period + 2 * TICK);
    }
    // Dormant users are polled too, with what the active ones leave.
    const dormantPolled = [...polls].filter(([uid, t]) => Number(uid.slice(1)) >= 150 && t.length > 0).length;
    expect(dormantPolled).toBeGreaterThan(0);
  });

  it('polls a dormant user again only after the dormant period, an active one after the active period', () => {
    const plan = planOf({ activeUsers: 1, dormantUsers: 1 });
    const now = Date.UTC(2026, 0, 2);
    const at = (ago: number) => new Date(now - ago);
    const users: UserPollState[] = [
      { uid: 'a', active: true, enqueuedAt: at(2 * HOUR_MS), polledAt: at(2 * HOUR_MS - 1000) },
      { uid: 'd', active: false, enqueuedAt: at(2 * HOUR_MS), polledAt: at(2 * HOUR_MS - 1000) },
      // In flight (queued after its last completion): not queued again.
      { uid: 'f', active: true, enqueuedAt: at(60_000), polledAt: at(3 * HOUR_MS) },
    ];
    const slice = pickRecentPolls(users, plan, { now, tickMs: TICK });
    expect(slice.active).toEqual(['a']);
    expect(slice.dormant).toEqual([]);
    expect(slice.inFlight).toBe(1);
    expect(slice.due).toEqual({ active: 1, dormant: 0 });
  });

  it('queues an active user as long before it falls due as recent polls took to complete, plus a tick', () => {
    const plan = planOf({ activeUsers: 2, dormantUsers: 0 });
    const now = Date.UTC(2026, 0, 2);
    const at = (ago: number) => new Date(now - ago);
    // 'slow' took 3 ticks from queue to completion, 2 ticks ago; 'x' falls due in 3.5 ticks.
    const slow = { uid: 'slow', active: true, enqueuedAt: at(5 * TICK), polledAt: at(2 * TICK) };
    const x = {
      uid: 'x',
      active: true,
      enqueuedAt: at(HOUR_MS - 3 * TICK),
      polledAt: at(HOUR_MS - 3.5 * TICK),
    };
    expect(pickRecentPolls([slow, x], plan, { now, tickMs: TICK }).active).toEqual(['x']);
    // Without the measured delay only a tick of lead: not yet.
    const fast = { ...slow, enqueuedAt: at(2.5 * TICK) };
    expect(pickRecentPolls([fast, x], plan, { now, tickMs: TICK }).active).toEqual([]);
  });

  it('queues nothing when the recent poll has no share', () => {
    const plan = planOf(
      { activeUsers: 1, dormantUsers: 0 },
      { requestsPerHour: 100, usablePerHour: 90, streamPerHour: 200 },
    );
    const users: UserPollState[] = [{ uid: 'a', active: true, enqueuedAt: null, polledAt: null }];
    expect(pickRecentPolls(users, plan, { now: Date.now(), tickMs: TICK }).active).toEqual([]);
    expect(plan.recent.activePeriodMs).toBeNull();
  });
});
