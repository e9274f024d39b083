import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BucketState,
  bucketParams,
  budgetKeyOf,
  createBudgetRegistry,
  takeToken,
} from '../../src/budget/request-budget.ts';
import { createManualClock } from '../../src/time/manual-clock.ts';

describe('token bucket sizing', () => {
  it('spends 85–98 % of the hourly limit in a long run and never more than the limit in any hour', () => {
    fc.assert(
      fc.property(fc.integer({ min: 100, max: 100_000 }), (limit) => {
        const p = bucketParams({ limit });
        const perHour = p.ratePerMs * 3_600_000;
        // Steady state (long backfill): the refill rate.
        expect(perHour / limit).toBeGreaterThanOrEqual(0.85);
        expect(perHour / limit).toBeLessThanOrEqual(0.98);
        // Worst hour: full bucket + an hour of refill.
        expect(p.capacity + perHour).toBeLessThanOrEqual(limit);
        // Small burst.
        expect(p.capacity).toBeLessThanOrEqual(20);
      }),
    );
  });

  it('never grants more than capacity + rate·t in any simulated interval', () => {
    const p = bucketParams({ limit: 2000 });
    let state: BucketState | undefined;
    let now = 0;
    const grants: number[] = [];
    // A greedy client asking as fast as it is allowed for 3 simulated hours.
    while (now < 3 * 3_600_000) {
      const r = takeToken(state, p, now);
      state = r.state;
      if (r.granted) grants.push(now);
      else now += r.waitMs;
    }
    const hour = 3_600_000;
    for (let start = 0; start + hour <= now; start += 60_000) {
      const inWindow = grants.filter((t) => t >= start && t < start + hour).length;
      expect(inWindow).toBeLessThanOrEqual(2000);
    }
    expect(grants.length / 3).toBeGreaterThan(0.85 * 2000);
  });
});

describe('in-process request budget', () => {
  it('waits via the clock when the bucket is empty and reports remaining tokens', async () => {
    const clock = createManualClock();
    const registry = createBudgetRegistry({
      rate: { limit: 600, windowMs: 60_000, capacity: 3, utilization: 1 },
      clock,
    });
    const budget = registry.forKey('some-token');
    expect(budget.key).toBe(budgetKeyOf('some-token'));
    expect(budget.key).not.toContain('some-token');
    expect(await budget.remaining()).toBe(3);
    for (let i = 0; i < 3; i++) await budget.take();
    expect(clock.sleeps).toEqual([]);
    expect(await budget.remaining()).toBe(0);
    await budget.take();
    expect(clock.sleeps).toHaveLength(1);
    // 597 per minute of refill ≈ one token per 100.5 ms.
    expect(clock.sleeps[0]).toBeGreaterThanOrEqual(100);
    expect(clock.sleeps[0]).toBeLessThanOrEqual(101);
    expect(registry.forKey('some-token')).toBe(budget);
    expect(registry.forKey('other-token')).not.toBe(budget);
  });

  it('stops waiting when the signal aborts', async () => {
    const registry = createBudgetRegistry({ rate: { limit: 1, capacity: 1 } });
    const budget = registry.forKey('t');
    await budget.take();
    const controller = new AbortController();
    const waiting = budget.take(controller.signal);
    controller.abort(new Error('stop'));
    await expect(waiting).rejects.toThrow('stop');
  });
});
