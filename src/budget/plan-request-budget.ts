/**
 * The budget planner (pure): how one org's requests per hour are divided among the kinds of work, in
 * order of precedence (stream, push and reconcile, the recent poll, the completeness audit, backfill).
 * The audit takes its share only from what the recent poll leaves above backfill's minimum.
 * Why and how: README.md, "`plan-request-budget.ts`".
 */

export const HOUR_MS = 3_600_000;

export interface BudgetPlanInput {
  /** The token's limit (`requestsPerHour`), for display. */
  requestsPerHour: number;
  /** What the request budget actually grants per hour (its sustained refill rate; below the limit). */
  usablePerHour: number;
  /** Estimated requests per hour of stream connects and replays. */
  streamPerHour: number;
  /** Estimated requests per hour of push-triggered and reconcile fetches. */
  pushAndReconcilePerHour: number;
  /** Share of the usable rate backfill always keeps, [0, 1). */
  backfillMinShare: number;
  /** Requests per hour the scheduled completeness audit asks (`budget.auditShare` of usable; 0 = off). */
  auditPerHour?: number;
  recent: {
    activeUsers: number;
    dormantUsers: number;
    /** Requests of one user's poll (one per resource and lookback window). */
    requestsPerUser: number;
    /** Configured period of active users (`schedules.recentPollMinutes`); 0 = recent poll off. */
    activePeriodMs: number;
    /** Configured period of dormant users (`budget.dormantPollMinutes`). */
    dormantPeriodMs: number;
  };
}

export type WorkKind = 'stream' | 'pushAndReconcile' | 'recent' | 'audit' | 'backfill';

export interface BudgetPlan {
  requestsPerHour: number;
  usablePerHour: number;
  /** Requests per hour planned for each kind; they add up to `usablePerHour`. */
  perHour: Record<WorkKind, number>;
  /** perHour ÷ usablePerHour. */
  shares: Record<WorkKind, number>;
  /** The most the recent poll may spend per hour (what the enqueue tick gates on). */
  recentCapPerHour: number;
  /** The estimates of stream and push/reconcile did not fit beside the backfill minimum. */
  overcommitted: boolean;
  recent: {
    activeUsers: number;
    dormantUsers: number;
    requestsPerUser: number;
    /** Requests per hour the recent poll needs at the configured periods. */
    demandPerHour: number;
    configuredActivePeriodMs: number;
    configuredDormantPeriodMs: number;
    /** The periods the plan achieves (≥ configured); null when the recent poll gets nothing at all. */
    activePeriodMs: number | null;
    dormantPeriodMs: number | null;
    /** activePeriodMs ÷ configured (1 when the configuration fits). */
    stretch: number | null;
  };
}

export function planRequestBudget(input: BudgetPlanInput): BudgetPlan {
  const usable = Math.max(0, input.usablePerHour);
  const minShare = Math.min(Math.max(input.backfillMinShare, 0), 1);
  const backfillFloor = usable * minShare;
  const reservable = usable - backfillFloor;
  const stream = Math.min(Math.max(0, input.streamPerHour), reservable);
  const pushAndReconcile = Math.min(Math.max(0, input.pushAndReconcilePerHour), reservable - stream);
  const overcommitted = stream < input.streamPerHour || pushAndReconcile < input.pushAndReconcilePerHour;
  const recentCap = Math.max(0, reservable - stream - pushAndReconcile);

  const r = input.recent;
  const on = r.activePeriodMs > 0 && r.requestsPerUser > 0;
  const dormantPeriod = Math.max(r.dormantPeriodMs, r.activePeriodMs);
  // Users swept per active period, counting a dormant user as the fraction of it that falls due.
  const usersPerActivePeriod = on ? r.activeUsers + (r.dormantUsers * r.activePeriodMs) / dormantPeriod : 0;
  const demand = on ? (usersPerActivePeriod * r.requestsPerUser * HOUR_MS) / r.activePeriodMs : 0;
  const recent = Math.min(demand, recentCap);
  const audit = Math.min(Math.max(0, input.auditPerHour ?? 0), Math.max(0, recentCap - recent));
  const backfill = usable - stream - pushAndReconcile - recent - audit;

  let stretch: number | null = 1;
  // A share too small to be a number of requests (or none) polls never.
  if (demand > recent) stretch = recent > 1e-9 ? demand / recent : null;
  const perHour = { stream, pushAndReconcile, recent, audit, backfill };
  const share = (n: number) => (usable > 0 ? n / usable : 0);
  return {
    requestsPerHour: input.requestsPerHour,
    usablePerHour: usable,
    perHour,
    shares: {
      stream: share(stream),
      pushAndReconcile: share(pushAndReconcile),
      recent: share(recent),
      audit: share(audit),
      backfill: share(backfill),
    },
    recentCapPerHour: recentCap,
    overcommitted,
    recent: {
      activeUsers: r.activeUsers,
      dormantUsers: r.dormantUsers,
      requestsPerUser: r.requestsPerUser,
      demandPerHour: demand,
      configuredActivePeriodMs: r.activePeriodMs,
      configuredDormantPeriodMs: dormantPeriod,
      activePeriodMs: stretch === null ? null : r.activePeriodMs * stretch,
      dormantPeriodMs: stretch === null ? null : dormantPeriod * stretch,
      stretch,
    },
  };
}
