/**
 * The budget planner: an org's requests per hour divided between the kinds of work, from the config
 * and the counts (how each reserved share is estimated), what the operator must hear about a plan, and
 * the README's sizing table drawn from it.
 */
import { type Config, configSchema, type OrganizationConfig } from '../config/schema.ts';
import {
  DEFAULT_REQUESTS_PER_HOUR,
  formatUtcDate,
  MAX_REQUEST_WINDOW_DAYS,
  planRecordWindows,
  toV2Resource,
} from '../validic/platform-limits.ts';
import { type RecentPollMode, recentPollWindows } from './recent-poll.ts';
import { bucketParams } from './request-budget.ts';

/**
 * The budget planner (pure): how one org's requests per hour are divided among the kinds of work, in
 * order of precedence (stream, push and reconcile, the recent poll, the completeness audit, backfill).
 * The audit takes its share only from what the recent poll leaves above backfill's minimum.
 *
 * The budget planner (pure): how one org's requests per hour are divided among the kinds of work, in
 * this order of precedence:
 *
 * 1. stream connects and replays (live data; reserved, not queued),
 * 2. push-triggered and reconcile fetches (users.sync, connections.recent, legacy.sync, legacy.fetch),
 * 3. the recent poll (records.recent: every user × resource over the lookback; during the first sync,
 *    everything this step may take, src/budget/first-sync.ts),
 * 4. backfill: whatever is left, and never less than `backfillMinShare` of the usable rate, so the
 *    kinds above can never starve it (they are clipped instead, and the plan says `overcommitted`).
 *
 * From the recent poll's share follows its sweep period. Recently active users are polled every
 * `activePeriodMs`, dormant ones every `dormantPeriodMs`; one sweep of the active period costs (active +
 * dormant × activePeriod ÷ dormantPeriod) × requests per user (one per resource). When that does not fit
 * the share at the configured periods, both periods stretch by the same factor (the ratio between them is
 * the operator's choice, so the planner keeps it).
 *
 * Rates are requests per hour of the caller's clock; periods are milliseconds of the same clock.
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
    /**
     * The first sync runs (src/budget/first-sync.ts): a backlog of every user, not a period, so it asks
     * for all the recent poll may take; the scheduled audit waits for it (it would find what is about to
     * come as drift).
     */
    firstSync?: boolean;
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
    /** Requests per hour the recent poll needs at the configured periods (during the first sync: all it may take). */
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
  const periodic = on ? (usersPerActivePeriod * r.requestsPerUser * HOUR_MS) / r.activePeriodMs : 0;
  const demand = on && r.firstSync ? Math.max(periodic, recentCap) : periodic;
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

/**
 * The planner's input from the configuration and what the warehouse counts (pure).
 *
 * The planner's input from the configuration and what the warehouse counts (pure). How each reserved
 * share is estimated, and why:
 *
 * - stream: `stream.connections` × `budget.streamRequestsPerConnectionHour`, a fixed reservation. The
 *   stream spends requests only on connects and replays, few and bursty (a rebalancing storm), so a
 *   measured last hour would swing with noise; a generous constant is simpler and safe.
 * - push and reconcile: push-triggered fetches MEASURED (the requests the fetches claimed in the last
 *   hour took, plus the fetches waiting in the durable queue, each at least one request: they follow the
 *   population's activity, which configuration cannot know), capped by `pushShare` at
 *   `budget.pushMaxShare` (0.4) of the usable rate and at what the stream, the reconcile jobs and
 *   backfill's minimum leave (the planner clips its second kind as one number; capping push here keeps
 *   reconcile's part whole, so a flood of pushes never clips it), plus the scheduled reconcile-type jobs
 *   computed from their schedules: users.sync (one page per 1,000 users), connections.recent (one per 30
 *   days of `reconcileDays`), legacy.sync (one per object). push.drain paces itself to the cap (not to the
 *   plan's estimate, which lags a fresh burst); since the estimate includes what the last hour spent, the
 *   plan follows what push actually takes.
 *   Legacy delete checks (one request per suspect, asked after a complete window read) are measured
 *   over the last hour (`validic_sync.legacy_delete_checks.asked_at`) and counted with reconcile; they
 *   never exceed `legacy.deleteCheckShare` of the usable rate, which the passes enforce themselves.
 * - usable: the request budget's sustained refill rate (src/budget/request-budget.ts), not the raw limit.
 */
export interface BudgetCounts {
  activeUsers: number;
  dormantUsers: number;
  /** Requests of the push fetches claimed in the last hour (validic_sync.push_fetches). */
  pushFetchesLastHour: number;
  /** Legacy delete checks asked by id in the last hour (at most `legacy.deleteCheckShare` of the budget). */
  legacyDeleteChecksLastHour?: number;
  /** Requests the push fetches waiting in the durable queue plan (each at least one). */
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
 * `recentPoll` says whether the recent poll runs now and over how many days (src/budget/recent-poll.ts);
 * without it the plan is the blind poll of the whole lookback (what the sizing table compares with).
 */
export function budgetPlanInput(
  config: Config,
  org: OrganizationConfig,
  counts: BudgetCounts,
  recentPoll?: Pick<RecentPollMode, 'polling' | 'days'> & Partial<Pick<RecentPollMode, 'firstSync'>>,
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
      ...(recentPoll?.firstSync ? { firstSync: true } : {}),
    },
  };
}

/**
 * What the operator must hear about a plan (pure): the configured recent-poll period cannot be met, the
 * sweep is longer than the lookback (late data older than the lookback may then be missed by the poll),
 * or the reserved kinds do not fit beside backfill's minimum share. Each message names the setting to
 * change. The worker logs each once per process (records-recent.ts).
 */
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

/** A sweep period as people read it (pure): "45 min", "12.5 h", "5.3 d"; null (no share) is "never". */
export function formatPeriod(ms: number | null): string {
  if (ms === null) return 'never';
  const minutes = Math.round(ms / 60_000);
  if (minutes < 2) return `${Math.round(ms / 1000)} s`;
  if (minutes <= 120) return `${minutes} min`;
  if (ms < 48 * 3_600_000) return `${(ms / 3_600_000).toFixed(1)} h`;
  return `${(ms / 86_400_000).toFixed(1)} d`;
}

/**
 * The README's sizing table, computed by the budget planner (pure): what each kind of REST work costs and
 * how long it takes at 2,000 requests per hour, from 1,000 to 1,000,000 users, with the defaults (7
 * resources, one stream connection and the reconciliation stream, users.sync hourly, connections.recent
 * daily, backfill's minimum 10 %). Every user counts as active: the worst case for the polls.
 * Columns: the hourly reservations; what stream-first planning leaves to backfill while the stream is
 * healthy; how many new users a day that backfills a year of history for; one year of history for every
 * user on it; and one sweep of the recent poll over every user: what a fallback poll takes while the stream
 * is down (a one-day outage costs one window per resource, as the default 3-day lookback does), and the
 * period of the blind poll (`sync.recentPoll` 'always') stream-first planning replaces.
 * `node scripts/sizing-table.ts --write` puts it between the README's markers; a unit test checks it.
 */
export const SIZING_POPULATIONS = [1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000];

/** Requests of one user's year of history: one per resource and ≤ 30-day window (edges included). */
function yearRequestsPerUser(resources: number): number {
  const today = Date.UTC(2026, 0, 1) / 86_400_000;
  return resources * planRecordWindows(formatUtcDate(today - 365), formatUtcDate(today)).length;
}

export function sizingTable(requestsPerHour = DEFAULT_REQUESTS_PER_HOUR): string[] {
  const config = configSchema.parse({ organizations: [{ orgId: 'o', token: 't', requestsPerHour }] });
  const org = config.organizations[0]!;
  const resources = org.resources.length;
  const rows = SIZING_POPULATIONS.map((users) => {
    const counts = { activeUsers: users, dormantUsers: 0, pushFetchesLastHour: 0 };
    const plan = (recentPoll?: { polling: boolean; days: number }) =>
      planRequestBudget(budgetPlanInput(config, org, counts, recentPoll));
    const healthy = plan({ polling: false, days: 0 });
    const reserved = healthy.perHour.stream + healthy.perHour.pushAndReconcile;
    const backfill = healthy.perHour.backfill;
    const year = backfill > 0 ? ((users * yearRequestsPerUser(resources)) / backfill) * HOUR_MS : null;
    const newUsersPerDay = (backfill * 24) / yearRequestsPerUser(resources);
    const sweep = plan({ polling: true, days: 1 });
    return [
      users.toLocaleString('en-US'),
      `${Math.round(reserved)}${healthy.overcommitted ? ' (over)' : ''}`,
      String(Math.round(backfill)),
      Math.floor(newUsersPerDay).toLocaleString('en-US'),
      formatPeriod(year),
      formatPeriod(sweep.recent.activePeriodMs),
      // Cells are drawn at random: a given user is audited on average once in users ÷ cells per hour.
      healthy.perHour.audit > 0 ? formatPeriod((users / healthy.perHour.audit) * HOUR_MS) : 'never',
    ];
  });
  const header = [
    'users',
    'reserved/h (streams, reconcile)',
    'left to backfill/h (stream healthy)',
    'new users a day, a year of history each',
    'a year of history for every user',
    'one recent-poll sweep of every user (stream down, or `always`)',
    'the completeness audit audits a given user, on average, every',
  ];
  return [
    `| ${header.join(' | ')} |`,
    `| ${header.map((_, i) => (i <= 3 ? '---:' : '---')).join(' | ')} |`,
    ...rows.map((r) => `| ${r.join(' | ')} |`),
  ];
}
