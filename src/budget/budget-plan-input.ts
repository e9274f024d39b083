/**
 * The planner's input from the configuration and what the warehouse counts (pure).
 * Why and how: README.md, "`budget-plan-input.ts`".
 */
import type { Config, OrganizationConfig } from '../config/schema.ts';
import { MAX_REQUEST_WINDOW_DAYS } from '../validic/platform-limits.ts';
import { toV2Resource } from '../validic/v2-resources.ts';
import { type BudgetPlanInput, HOUR_MS } from './plan-request-budget.ts';
import type { RecentPollMode } from './recent-poll-mode.ts';
import { recentPollWindows } from './recent-poll-windows.ts';
import { bucketParams } from './token-bucket.ts';

export interface BudgetCounts {
  activeUsers: number;
  dormantUsers: number;
  /** Requests of the push fetches claimed in the last hour (validic_sync.push_fetches). */
  pushFetchesLastHour: number;
  /** Legacy delete checks asked by id in the last hour (at most `legacy.deleteCheckShare` of the budget). */
  legacyDeleteChecksLastHour?: number;
  /** Push fetches waiting in the durable queue (pending, each at least one request). */
  pushFetchesPending?: number;
}

/** Push's part of the plan (push-triggered fetches only; reconcile is counted beside it). */
export interface PushShare {
  /** The last hour's push requests plus the pending backlog. */
  demandPerHour: number;
  /**
   * The most push may spend per hour: `budget.pushMaxShare` of the usable rate, less whatever the
   * stream, the reconcile jobs and backfill's minimum would lose to it. The drain paces itself to this.
   */
  capPerHour: number;
  /** What the plan reserves for push: min(demand, cap). */
  perHour: number;
}

/** Runs per hour of a schedule of `minutes` (0 = off). */
const perHour = (minutes: number) => (minutes > 0 ? 60 / minutes : 0);

/**
 * Requests of one user's recent poll: one per resource and ≤ 30-day window of the days polled (+ today),
 * the lookback unless given (a fallback poll covers only the outage's days).
 */
export function recentRequestsPerUser(
  config: Config,
  org: OrganizationConfig,
  days = config.sync.lookbackDays,
): number {
  // How many windows depends only on the range's length, not on which day it is.
  const windows = recentPollWindows(days, Date.UTC(2026, 0, 1)).length;
  return new Set(org.resources.map(toV2Resource)).size * windows;
}

/** Requests per hour of the scheduled reconcile-type jobs (users.sync, connections.recent, legacy.sync). */
function reconcilePerHour(config: Config, org: OrganizationConfig, users: number): number {
  const s = config.schedules;
  return s.enabled
    ? Math.max(1, Math.ceil(users / 1000)) * perHour(s.usersSyncMinutes) +
        Math.ceil(s.reconcileDays / MAX_REQUEST_WINDOW_DAYS) * perHour(s.reconcileMinutes) +
        (org.legacy.enabled ? org.legacy.objects.length * perHour(s.legacyLatestMinutes) : 0)
    : 0;
}

/**
 * Stream connects and replays: the primary's connections, and one connect per pass of the reconciliation
 * stream (its scheduled passes; a pass after a gap replaces the next one's need more than it adds).
 */
function streamPerHour(config: Config, org: OrganizationConfig): number {
  const primary = org.stream.connections * config.budget.streamRequestsPerConnectionHour;
  const passes =
    org.stream.reconcile && config.schedules.enabled ? perHour(config.schedules.reconcileStreamMinutes) : 0;
  return primary + passes;
}

const usablePerHour = (org: OrganizationConfig) =>
  bucketParams({ limit: org.requestsPerHour }).ratePerMs * HOUR_MS;

/**
 * What the planner leaves its second kind (push and reconcile) once backfill's minimum and the stream are
 * set aside: the same arithmetic as plan-request-budget.ts, so a sum capped at it is never clipped there
 * by a rounding difference.
 */
function pushAndReconcileRoom(config: Config, org: OrganizationConfig): number {
  const usable = Math.max(0, usablePerHour(org));
  const reservable = usable - usable * Math.min(Math.max(config.budget.backfillMinShare, 0), 1);
  const stream = Math.min(Math.max(0, streamPerHour(config, org)), reservable);
  return reservable - stream;
}

/**
 * Push's demand and its cap. Demand: what the last hour spent plus what waits (each pending fetch costs
 * at least one request). Cap: `budget.pushMaxShare` of the usable rate, and never more than what is
 * left after backfill's minimum, the stream and the reconcile jobs, so a flood of pushes cannot clip
 * those (the planner clips its second kind as one number; this keeps reconcile's part whole).
 */
export function pushShare(config: Config, org: OrganizationConfig, counts: BudgetCounts): PushShare {
  const usable = usablePerHour(org);
  const reconcile = reconcilePerHour(config, org, counts.activeUsers + counts.dormantUsers);
  const room = pushAndReconcileRoom(config, org) - reconcile;
  const capPerHour = Math.max(0, Math.min(usable * config.budget.pushMaxShare, room));
  const demandPerHour = Math.max(0, counts.pushFetchesLastHour + (counts.pushFetchesPending ?? 0));
  return { demandPerHour, capPerHour, perHour: Math.min(demandPerHour, capPerHour) };
}

/**
 * `recentPoll` says whether the recent poll runs now and over how many days (recent-poll-mode.ts);
 * without it the plan is the blind poll of the whole lookback (what the sizing table compares with).
 */
export function budgetPlanInput(
  config: Config,
  org: OrganizationConfig,
  counts: BudgetCounts,
  recentPoll?: Pick<RecentPollMode, 'polling' | 'days'>,
): BudgetPlanInput {
  const s = config.schedules;
  const on = s.enabled && (recentPoll?.polling ?? true);
  // Legacy delete checks are reconcile-type work, measured over the last hour.
  const reconcile =
    reconcilePerHour(config, org, counts.activeUsers + counts.dormantUsers) +
    (counts.legacyDeleteChecksLastHour ?? 0);
  return {
    requestsPerHour: org.requestsPerHour,
    usablePerHour: usablePerHour(org),
    streamPerHour: streamPerHour(config, org),
    // Reconcile alone may overcommit the plan (the planner says so); push never adds to that.
    pushAndReconcilePerHour: Math.max(
      reconcile,
      Math.min(pushShare(config, org, counts).perHour + reconcile, pushAndReconcileRoom(config, org)),
    ),
    backfillMinShare: config.budget.backfillMinShare,
    auditPerHour: s.enabled && s.auditMinutes > 0 ? usablePerHour(org) * config.budget.auditShare : 0,
    recent: {
      activeUsers: counts.activeUsers,
      dormantUsers: counts.dormantUsers,
      requestsPerUser: recentRequestsPerUser(config, org, recentPoll?.days),
      activePeriodMs: on ? s.recentPollMinutes * 60_000 : 0,
      dormantPeriodMs: config.budget.dormantPollMinutes * 60_000,
    },
  };
}
