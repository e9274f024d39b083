/**
 * What the worker warns about a plan: nothing when the configuration fits; the period (naming the
 * settings and the values that would fit) when it does not; the lookback when the sweep outlasts it.
 */
import { describe, expect, it } from 'vitest';
import { budgetPlanInput, budgetWarnings, planRequestBudget } from '../../src/budget/plan-request-budget.ts';
import { configSchema } from '../../src/config/schema.ts';

const config = configSchema.parse({ organizations: [{ orgId: 'o', token: 't' }] });
const planFor = (activeUsers: number, dormantUsers = 0) =>
  planRequestBudget(
    budgetPlanInput(config, config.organizations[0]!, { activeUsers, dormantUsers, pushFetchesLastHour: 0 }),
  );

describe('budgetWarnings', () => {
  it('says nothing when the configured sweep fits', () => {
    expect(budgetWarnings(planFor(200), 3)).toEqual([]);
  });

  it('names the settings, and values that fit, when the period cannot be met', () => {
    const warnings = budgetWarnings(planFor(300, 2700), 3);
    expect(warnings.map((w) => w.kind)).toEqual(['period']);
    expect(warnings[0]!.message).toContain('schedules.recentPollMinutes');
    expect(warnings[0]!.message).toContain('budget.dormantPollMinutes');
    expect(warnings[0]!.message).toMatch(/every 103 min/);
    expect(warnings[0]!.message).toMatch(/≥ 104 and ≥ 2481/);
  });

  it('warns about the lookback when a sweep outlasts it', () => {
    const warnings = budgetWarnings(planFor(30_000), 3);
    expect(warnings.map((w) => w.kind)).toEqual(['period', 'lookback']);
    expect(warnings[1]!.message).toContain('sync.lookbackDays=3');
    expect(budgetWarnings(planFor(30_000), 10).map((w) => w.kind)).toEqual(['period']);
  });
});
