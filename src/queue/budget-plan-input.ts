/**
 * The planner's input from the configuration and what the warehouse counts (pure).
 * Why and how: README.md, "`budget-plan-input.ts`".
 */
import type { Config, OrganizationConfig } from '../config/schema.ts';
import { bucketParams } from '../http/token-bucket.ts';
import { MAX_REQUEST_WINDOW_DAYS } from '../validic/platform-limits.ts';
import { toV2Resource } from '../validic/v2-resources.ts';
import { type BudgetPlanInput, HOUR_MS } from './plan-request-budget.ts';
import { recentPollWindows } from './recent-poll-windows.ts';

export interface BudgetCounts {
  activeUsers: number;
  dormantUsers: number;
  /** legacy.fetch jobs queued by push notifications in the last hour. */
  pushFetchesLastHour: number;
  /** Legacy delete checks asked by id in the last hour (at most `legacy.deleteCheckShare` of the budget). */
  legacyDeleteChecksLastHour?: number;
}

/** Runs per hour of a schedule of `minutes` (0 = off). */
const perHour = (minutes: number) => (minutes > 0 ? 60 / minutes : 0);

/** Requests of one user's recent poll: one per resource and ≤ 30-day window of the lookback (+ today). */
export function recentRequestsPerUser(config: Config, org: OrganizationConfig): number {
  // How many windows depends only on the range's length, not on which day it is.
  const windows = recentPollWindows(config.sync.lookbackDays, Date.UTC(2026, 0, 1)).length;
  return new Set(org.resources.map(toV2Resource)).size * windows;
}

export function budgetPlanInput(
  config: Config,
  org: OrganizationConfig,
  counts: BudgetCounts,
): BudgetPlanInput {
  const s = config.schedules;
  const on = s.enabled;
  const users = counts.activeUsers + counts.dormantUsers;
  const reconcile = on
    ? Math.max(1, Math.ceil(users / 1000)) * perHour(s.usersSyncMinutes) +
      Math.ceil(s.reconcileDays / MAX_REQUEST_WINDOW_DAYS) * perHour(s.reconcileMinutes) +
      (org.legacy.enabled ? org.legacy.objects.length * perHour(s.legacyLatestMinutes) : 0)
    : 0;
  const rate = bucketParams({ limit: org.requestsPerHour });
  return {
    requestsPerHour: org.requestsPerHour,
    usablePerHour: rate.ratePerMs * HOUR_MS,
    streamPerHour: org.stream.connections * config.budget.streamRequestsPerConnectionHour,
    pushAndReconcilePerHour:
      counts.pushFetchesLastHour + (counts.legacyDeleteChecksLastHour ?? 0) + reconcile,
    backfillMinShare: config.budget.backfillMinShare,
    recent: {
      activeUsers: counts.activeUsers,
      dormantUsers: counts.dormantUsers,
      requestsPerUser: recentRequestsPerUser(config, org),
      activePeriodMs: on ? s.recentPollMinutes * 60_000 : 0,
      dormantPeriodMs: config.budget.dormantPollMinutes * 60_000,
    },
  };
}
