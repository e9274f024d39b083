/**
 * Stream-first planning's switch (pure): the recent REST poll is off while the org's primary stream is
 * heard from, comes on as a fallback over the outage's days once it has been unheard for
 * `budget.streamFallbackMinutes`, and stays on where the stream cannot carry freshness.
 */
import { describe, expect, it } from 'vitest';
import { budgetPlanInput, planRequestBudget } from '../../src/budget/plan-request-budget.ts';
import { recentPollMode } from '../../src/budget/recent-poll.ts';
import { configSchema } from '../../src/config/schema.ts';

const NOW = Date.parse('2026-11-27T12:00:00Z');
const MIN = 60_000;

const configWith = (patch: Record<string, unknown> = {}, org: Record<string, unknown> = {}) =>
  configSchema.parse({ ...patch, organizations: [{ orgId: 'o', token: 't', ...org }] });

/** The mode once the first sync is complete (the stream-first switch proper). */
const mode = (
  lastHeardMs: number | undefined,
  patch?: Record<string, unknown>,
  org?: Record<string, unknown>,
  firstSyncComplete = true,
) => {
  const config = configWith(patch, org);
  return recentPollMode(config, config.organizations[0]!, lastHeardMs, NOW, firstSyncComplete);
};

describe('recentPollMode', () => {
  it('is off while the stream was heard within budget.streamFallbackMinutes (default 15)', () => {
    expect(mode(NOW - 14 * MIN)).toMatchObject({ mode: 'fallback', polling: false, days: 0 });
    expect(mode(NOW - 15 * MIN)).toMatchObject({ polling: false });
    expect(mode(NOW - 5 * MIN, { budget: { streamFallbackMinutes: 2 } })).toMatchObject({ polling: true });
  });

  it("falls back to polling the outage's days once the stream is unheard, at most the lookback", () => {
    // Heard today at 11:40: today only (the windows add their edge day).
    expect(mode(NOW - 20 * MIN)).toMatchObject({ mode: 'fallback', polling: true, days: 0 });
    // Heard yesterday evening: yesterday and today.
    expect(mode(Date.parse('2026-11-26T22:00:00Z'))).toMatchObject({ polling: true, days: 1 });
    // Down for ten days: the lookback (3) is what the poll re-reads; older days are the gap's.
    expect(mode(NOW - 10 * 86_400_000)).toMatchObject({ polling: true, days: 3 });
    expect(mode(undefined)).toMatchObject({ polling: true, days: 3, streamLastHeardAt: null });
  });

  it("keeps the blind poll with sync.recentPoll 'always', or when the stream's filter leaves resources out", () => {
    expect(mode(NOW, { sync: { recentPoll: 'always' } })).toMatchObject({
      mode: 'always',
      polling: true,
      days: 3,
    });
    const filtered = mode(
      NOW,
      {},
      { resources: ['measurements', 'sleep'], stream: { resources: ['measurement'] } },
    );
    expect(filtered).toMatchObject({ mode: 'always', polling: true });
    expect(filtered.reason).toContain('sleep');
    expect(
      mode(NOW, {}, { resources: ['measurements'], stream: { resources: ['measurement'] } }),
    ).toMatchObject({
      polling: false,
    });
  });

  it('is off when the recent poll is not scheduled', () => {
    expect(mode(undefined, { schedules: { recentPollMinutes: 0 } })).toMatchObject({
      mode: 'off',
      polling: false,
    });
    expect(mode(undefined, { schedules: { enabled: false } })).toMatchObject({ mode: 'off', polling: false });
  });

  it('gives the recent share to backfill while the stream is healthy, and the outage days to the poll after', () => {
    const config = configWith();
    const org = config.organizations[0]!;
    const counts = { activeUsers: 10_000, dormantUsers: 0, pushFetchesLastHour: 0 };
    const healthy = planRequestBudget(budgetPlanInput(config, org, counts, mode(NOW - MIN)));
    expect(healthy.perHour.recent).toBe(0);
    // What the recent poll leaves goes to the completeness audit's share (5 %) and to backfill.
    expect(healthy.shares.audit).toBeCloseTo(0.05);
    expect(healthy.shares.backfill).toBeGreaterThan(0.9);
    const down = planRequestBudget(budgetPlanInput(config, org, counts, mode(NOW - 20 * MIN)));
    expect(down.perHour.recent).toBeGreaterThan(0);
    expect(down.recent.requestsPerUser).toBe(7);
  });

  it('polls the first sync over the lookback once the stream is heard, until it is complete, in every mode', () => {
    const heard = mode(NOW - MIN, {}, {}, false);
    expect(heard).toMatchObject({ mode: 'fallback', polling: true, days: 3, firstSync: true });
    expect(heard.reason).toContain('first sync');
    // Whatever the stream-first switch would say: heard long ago, or a blind poll.
    expect(mode(NOW - 10 * 86_400_000, {}, {}, false)).toMatchObject({
      polling: true,
      days: 3,
      firstSync: true,
    });
    expect(mode(NOW, { sync: { recentPoll: 'always', lookbackDays: 5 } }, {}, false)).toMatchObject({
      mode: 'always',
      polling: true,
      days: 5,
      firstSync: true,
    });
    // Not before the stream is heard (the fallback polls the lookback meanwhile), nor once complete.
    expect(mode(undefined, {}, {}, false)).toMatchObject({ polling: true, firstSync: false });
    expect(mode(NOW - MIN, {}, {}, true)).toMatchObject({ polling: false, firstSync: false });
    // Never when the recent poll is not scheduled at all.
    expect(mode(NOW, { schedules: { recentPollMinutes: 0 } }, {}, false)).toMatchObject({
      mode: 'off',
      firstSync: false,
    });
  });

  it('gives the first sync all the recent poll may take, and the scheduled audit nothing until it is done', () => {
    const config = configWith();
    const org = config.organizations[0]!;
    const counts = { activeUsers: 0, dormantUsers: 1000, pushFetchesLastHour: 0 };
    const first = planRequestBudget(budgetPlanInput(config, org, counts, mode(NOW - MIN, {}, {}, false)));
    expect(first.perHour.recent).toBeCloseTo(first.recentCapPerHour);
    expect(first.perHour.audit).toBe(0);
    expect(first.recent.stretch).toBe(1);
    expect(first.shares.backfill).toBeCloseTo(config.budget.backfillMinShare);
    // The same users polled on the fallback's periods (dormant: daily) ask far less.
    const periodic = planRequestBudget(budgetPlanInput(config, org, counts, mode(undefined)));
    expect(periodic.perHour.recent).toBeLessThan(first.perHour.recent / 2);
    expect(periodic.perHour.audit).toBeGreaterThan(0);
  });
});
