/**
 * The budget planner: the shares add up to the usable rate, follow the order of precedence (stream,
 * push/reconcile, recent poll, backfill), backfill never gets less than its minimum share, and the recent
 * poll's sweep period is the configured one when it fits, else stretched just enough to fit its share;
 * push takes at most its share (budget.pushMaxShare) and never what the stream and reconcile jobs need.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  type BudgetPlanInput,
  budgetPlanInput,
  HOUR_MS,
  planRequestBudget,
  pushShare,
} from '../../src/budget/plan-request-budget.ts';
import { configSchema } from '../../src/config/schema.ts';

const input = fc.record({
  requestsPerHour: fc.integer({ min: 1, max: 100_000 }),
  usablePerHour: fc.double({ min: 0, max: 100_000, noNaN: true }),
  streamPerHour: fc.double({ min: 0, max: 5_000, noNaN: true }),
  pushAndReconcilePerHour: fc.double({ min: 0, max: 5_000, noNaN: true }),
  backfillMinShare: fc.double({ min: 0, max: 0.9, noNaN: true }),
  recent: fc.record({
    activeUsers: fc.integer({ min: 0, max: 200_000 }),
    dormantUsers: fc.integer({ min: 0, max: 200_000 }),
    requestsPerUser: fc.integer({ min: 0, max: 14 }),
    activePeriodMs: fc.oneof(fc.constant(0), fc.integer({ min: 60_000, max: 7 * 86_400_000 })),
    dormantPeriodMs: fc.integer({ min: 0, max: 30 * 86_400_000 }),
  }),
}) satisfies fc.Arbitrary<BudgetPlanInput>;

const close = (a: number, b: number) => Math.abs(a - b) <= 1e-6 * Math.max(1, Math.abs(a), Math.abs(b));

describe('planRequestBudget', () => {
  it('divides the usable rate in order of precedence, backfill never below its minimum share', () => {
    fc.assert(
      fc.property(input, (i) => {
        const plan = planRequestBudget(i);
        const { stream, pushAndReconcile, recent, backfill } = plan.perHour;
        for (const n of Object.values(plan.perHour)) expect(n).toBeGreaterThanOrEqual(-1e-9);
        expect(close(stream + pushAndReconcile + recent + backfill, i.usablePerHour)).toBe(true);
        expect(backfill).toBeGreaterThanOrEqual(i.usablePerHour * i.backfillMinShare - 1e-6);
        // A later kind gets something only when every earlier one got its whole estimate.
        if (pushAndReconcile > 0) expect(close(stream, i.streamPerHour)).toBe(true);
        if (recent > 0) {
          expect(close(stream, i.streamPerHour)).toBe(true);
          expect(close(pushAndReconcile, i.pushAndReconcilePerHour)).toBe(true);
        }
        expect(plan.overcommitted).toBe(
          stream < i.streamPerHour || pushAndReconcile < i.pushAndReconcilePerHour,
        );
        if (plan.overcommitted) expect(close(backfill, i.usablePerHour * i.backfillMinShare)).toBe(true);
        expect(recent).toBeLessThanOrEqual(plan.recentCapPerHour + 1e-9);
      }),
      { numRuns: 5000 },
    );
  });

  it('keeps the configured sweep when it fits, else stretches both periods just enough', () => {
    fc.assert(
      fc.property(input, (i) => {
        const r = planRequestBudget(i).recent;
        if (r.activePeriodMs === null) {
          // Only when the poll needs requests and gets none.
          expect(r.demandPerHour).toBeGreaterThan(0);
          return;
        }
        expect(r.activePeriodMs).toBeGreaterThanOrEqual(i.recent.activePeriodMs);
        if (i.recent.activePeriodMs === 0) return;
        expect(
          close(r.dormantPeriodMs! / r.activePeriodMs, r.configuredDormantPeriodMs / i.recent.activePeriodMs),
        ).toBe(true);
        // What one sweep costs per hour at the planned periods is what the recent poll is given.
        const users = i.recent.activeUsers + (i.recent.dormantUsers * r.activePeriodMs) / r.dormantPeriodMs!;
        const costPerHour = (users * i.recent.requestsPerUser * HOUR_MS) / r.activePeriodMs;
        const plan = planRequestBudget(i);
        if (r.stretch! > 1) expect(close(costPerHour, plan.perHour.recent)).toBe(true);
        else expect(costPerHour).toBeLessThanOrEqual(plan.perHour.recent * (1 + 1e-9) + 1e-9);
      }),
      { numRuns: 5000 },
    );
  });

  it('plans the issue example: 3,000 active users × 7 resources at 2,000 per hour', () => {
    const config = configSchema.parse({ organizations: [{ orgId: 'o', token: 't' }] });
    const plan = planRequestBudget(
      budgetPlanInput(config, config.organizations[0]!, {
        activeUsers: 3000,
        dormantUsers: 0,
        pushFetchesLastHour: 0,
      }),
    );
    expect(plan.usablePerHour).toBeCloseTo(1880); // 95 % of 2,000 less the burst of 20
    // One connection × 12, and the reconciliation stream's hourly pass (one connect).
    expect(plan.perHour.stream).toBe(13);
    expect(plan.perHour.pushAndReconcile).toBeCloseTo(3 + 1 / 24); // 3 user pages hourly, reconcile daily
    expect(plan.shares.backfill).toBeCloseTo(0.1);
    expect(plan.perHour.recent).toBeCloseTo(1880 * 0.9 - 13 - 3 - 1 / 24);
    // 21,000 requests per sweep at ~1,677 per hour: every 12.5 hours instead of hourly.
    expect(plan.recent.activePeriodMs! / HOUR_MS).toBeCloseTo(21_000 / plan.perHour.recent, 6);
    expect(plan.recent.activePeriodMs! / HOUR_MS).toBeCloseTo(12.52, 1);
  });

  it('counts a dormant user as the share of an active period in which it falls due', () => {
    const plan = planRequestBudget({
      requestsPerHour: 2000,
      usablePerHour: 1000,
      streamPerHour: 0,
      pushAndReconcilePerHour: 0,
      backfillMinShare: 0.1,
      recent: {
        activeUsers: 100,
        dormantUsers: 2400,
        requestsPerUser: 5,
        activePeriodMs: HOUR_MS,
        dormantPeriodMs: 24 * HOUR_MS,
      },
    });
    // (100 + 2400 / 24) × 5 = 1,000 requests an hour needed, 900 given.
    expect(plan.recent.demandPerHour).toBeCloseTo(1000);
    expect(plan.perHour.recent).toBeCloseTo(900);
    expect(plan.recent.activePeriodMs).toBeCloseTo(HOUR_MS / 0.9);
    expect(plan.recent.dormantPeriodMs).toBeCloseTo((24 * HOUR_MS) / 0.9);
    expect(plan.perHour.backfill).toBeCloseTo(100);
  });

  it("gives the completeness audit its share of what the recent poll leaves above backfill's minimum", () => {
    const base = {
      requestsPerHour: 2000,
      usablePerHour: 1000,
      streamPerHour: 50,
      pushAndReconcilePerHour: 50,
      backfillMinShare: 0.1,
      auditPerHour: 50,
    };
    const recent = (activeUsers: number) => ({
      activeUsers,
      dormantUsers: 0,
      requestsPerUser: 1,
      activePeriodMs: HOUR_MS,
      dormantPeriodMs: HOUR_MS,
    });
    // The recent poll needs 300: the audit gets its 50, backfill the rest (550).
    const roomy = planRequestBudget({ ...base, recent: recent(300) });
    expect(roomy.perHour).toEqual({
      stream: 50,
      pushAndReconcile: 50,
      recent: 300,
      audit: 50,
      backfill: 550,
    });
    // The recent poll needs 780 of the 800 above backfill's 100: the audit gets the 20 left.
    const tight = planRequestBudget({ ...base, recent: recent(780) });
    expect(tight.perHour.audit).toBeCloseTo(20);
    expect(tight.perHour.backfill).toBeCloseTo(100);
    // The recent poll takes everything above the minimum: no audit, backfill keeps its minimum.
    const starved = planRequestBudget({ ...base, recent: recent(5000) });
    expect(starved.perHour.audit).toBe(0);
    expect(starved.perHour.backfill).toBeCloseTo(100);
  });
});

describe("push's share", () => {
  const configOf = (budget: Record<string, unknown> = {}, org: Record<string, unknown> = {}) =>
    configSchema.parse({ budget, organizations: [{ orgId: 'o', token: 't', ...org }] });
  const plan = (
    config: ReturnType<typeof configOf>,
    pushFetchesLastHour: number,
    pushFetchesPending: number,
  ) => {
    const counts = { activeUsers: 3000, dormantUsers: 7000, pushFetchesLastHour, pushFetchesPending };
    const org = config.organizations[0]!;
    return {
      plan: planRequestBudget(budgetPlanInput(config, org, counts)),
      push: pushShare(config, org, counts),
    };
  };

  it('asks what the last hour spent plus what waits, up to budget.pushMaxShare (40 %) of the usable rate', () => {
    const config = configOf();
    expect(plan(config, 100, 50).push).toEqual({ demandPerHour: 150, capPerHour: 1880 * 0.4, perHour: 150 });
    const flood = plan(config, 750, 29_000);
    expect(flood.push.perHour).toBeCloseTo(752);
    // Stream and reconcile are untouched; the recent poll keeps the rest above backfill's minimum.
    const quiet = plan(config, 0, 0).plan;
    expect(flood.plan.perHour.stream).toBe(quiet.perHour.stream);
    expect(flood.plan.perHour.pushAndReconcile - 752).toBeCloseTo(quiet.perHour.pushAndReconcile);
    expect(flood.plan.perHour.recent).toBeCloseTo(
      1880 * 0.9 - quiet.perHour.pushAndReconcile - quiet.perHour.stream - 752,
    );
    expect(flood.plan.shares.backfill).toBeCloseTo(0.1);
    expect(flood.plan.overcommitted).toBe(false);
  });

  it('never takes what the stream, the reconcile jobs and backfill minimum need', () => {
    fc.assert(
      fc.property(
        fc.double({ min: 0, max: 0.9, noNaN: true }),
        fc.double({ min: 0, max: 0.9, noNaN: true }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 20_000 }),
        fc.integer({ min: 0, max: 1_000_000 }),
        (pushMaxShare, backfillMinShare, connections, requestsPerHour, pending) => {
          const config = configOf(
            { pushMaxShare, backfillMinShare, streamRequestsPerConnectionHour: 12 },
            { requestsPerHour, stream: { connections } },
          );
          const flood = plan(config, 0, pending);
          const quiet = plan(config, 0, 0).plan;
          expect(flood.push.capPerHour).toBeLessThanOrEqual(flood.plan.usablePerHour * pushMaxShare + 1e-9);
          expect(flood.plan.perHour.stream).toBeCloseTo(quiet.perHour.stream, 9);
          expect(flood.plan.perHour.pushAndReconcile - flood.push.perHour).toBeCloseTo(
            quiet.perHour.pushAndReconcile,
            9,
          );
          expect(flood.plan.perHour.backfill).toBeGreaterThanOrEqual(
            flood.plan.usablePerHour * backfillMinShare - 1e-6,
          );
          // Push never makes an overcommitted plan of one that was not.
          if (!quiet.overcommitted) expect(flood.plan.overcommitted).toBe(false);
        },
      ),
      { numRuns: 2000 },
    );
  });
});
