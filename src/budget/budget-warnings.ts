/**
 * What the operator must hear about a plan (pure): the configured recent-poll period cannot be met, the
 * sweep is longer than the lookback (late data older than the lookback may then be missed by the poll),
 * or the reserved kinds do not fit beside backfill's minimum share. Each message names the setting to
 * change. The worker logs each once per process (records-recent.ts).
 */
import { formatPeriod } from './format-period.ts';
import type { BudgetPlan } from './plan-request-budget.ts';

const DAY_MS = 86_400_000;

export interface BudgetWarning {
  /** Stable id, so a process warns once per org and kind. */
  kind: 'period' | 'lookback' | 'overcommitted';
  message: string;
}

export function budgetWarnings(plan: BudgetPlan, lookbackDays: number): BudgetWarning[] {
  const out: BudgetWarning[] = [];
  const r = plan.recent;
  const users = r.activeUsers + r.dormantUsers;
  if (r.configuredActivePeriodMs > 0 && (r.stretch === null || r.stretch > 1.0001)) {
    const achieved = r.activePeriodMs === null ? 'never' : `every ${formatPeriod(r.activePeriodMs)}`;
    const fits =
      r.activePeriodMs === null || r.dormantPeriodMs === null
        ? ''
        : ` (for the current population: ≥ ${Math.ceil(r.activePeriodMs / 60_000)} and ≥ ${Math.ceil(r.dormantPeriodMs / 60_000)})`;
    out.push({
      kind: 'period',
      message:
        `the recent poll of ${users} users × ${r.requestsPerUser} requests needs ${Math.round(r.demandPerHour)} ` +
        `requests per hour at schedules.recentPollMinutes=${r.configuredActivePeriodMs / 60_000}, but the budget ` +
        `leaves it ${Math.round(plan.recentCapPerHour)}: active users are polled ${achieved}. Set ` +
        `schedules.recentPollMinutes and budget.dormantPollMinutes to what the budget allows${fits}, or raise ` +
        `VALIDIC_REQUESTS_PER_HOUR (organizations[].requestsPerHour) if the platform grants more`,
    });
  }
  const lookbackMs = (lookbackDays + 1) * DAY_MS;
  if (r.configuredActivePeriodMs > 0 && (r.activePeriodMs === null || r.activePeriodMs > lookbackMs)) {
    out.push({
      kind: 'lookback',
      message:
        `the recent poll's sweep (${formatPeriod(r.activePeriodMs)}) is longer than ` +
        `sync.lookbackDays=${lookbackDays} (+ today): records that arrive late by more than the lookback ` +
        `can be missed between sweeps. Raise sync.lookbackDays, or shorten the sweep (see schedules.recentPollMinutes)`,
    });
  }
  if (plan.overcommitted) {
    out.push({
      kind: 'overcommitted',
      message:
        "stream and push/reconcile work is estimated above what the budget leaves beside backfill's minimum " +
        `share (budget.backfillMinShare=${plan.usablePerHour > 0 ? Math.round((plan.perHour.backfill / plan.usablePerHour) * 100) / 100 : 0}): ` +
        'lower budget.streamRequestsPerConnectionHour or stream.connections, or lengthen schedules.usersSyncMinutes / legacyLatestMinutes',
    });
  }
  return out;
}
