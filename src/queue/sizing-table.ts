/**
 * The README's sizing table, computed by the budget planner (pure): population × resources → the recent
 * poll's sweep period at 2,000 requests per hour, with the defaults (one stream connection, users.sync
 * hourly, reconcile daily, backfill's minimum 10 %, a lookback within 30 days). Every user counts as
 * active: the worst case, and what a population whose devices all sync looks like.
 * `node scripts/sizing-table.ts --write` puts it between the README's markers; a unit test checks it.
 */
import { configSchema } from '../config/schema.ts';
import { DEFAULT_REQUESTS_PER_HOUR } from '../validic/platform-limits.ts';
import { V2_RESOURCES } from '../validic/v2-resources.ts';
import { budgetPlanInput } from './budget-plan-input.ts';
import { formatPeriod } from './format-period.ts';
import { planRequestBudget } from './plan-request-budget.ts';

export const SIZING_POPULATIONS = [100, 250, 500, 1000, 2000, 3000, 5000, 10_000, 30_000];
export const SIZING_RESOURCES = [1, 3, 7];

export function sizingTable(requestsPerHour = DEFAULT_REQUESTS_PER_HOUR): string[] {
  const rows: string[][] = [];
  for (const users of SIZING_POPULATIONS) {
    const row = [users.toLocaleString('en-US')];
    for (const n of SIZING_RESOURCES) {
      const config = configSchema.parse({
        organizations: [{ orgId: 'o', token: 't', requestsPerHour, resources: V2_RESOURCES.slice(0, n) }],
      });
      const plan = planRequestBudget(
        budgetPlanInput(config, config.organizations[0]!, {
          activeUsers: users,
          dormantUsers: 0,
          pushFetchesLastHour: 0,
        }),
      );
      row.push(`${formatPeriod(plan.recent.activePeriodMs)} (${Math.round(plan.shares.recent * 100)} %)`);
    }
    rows.push(row);
  }
  const header = ['users', ...SIZING_RESOURCES.map((n) => `${n} resource${n > 1 ? 's' : ''}`)];
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (i === 0 ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
}
