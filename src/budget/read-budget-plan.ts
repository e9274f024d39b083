/**
 * An org's budget plan as of now, read from the warehouse; the slice of due users one records.recent
 * tick enqueues; and the plan as `status` and `/metrics` show it.
 */
import type { Kysely } from 'kysely';
import type { Config, OrganizationConfig } from '../config/schema.ts';
import type { DateWindow } from '../validic/platform-limits.ts';
import type { Database } from '../warehouse/database.ts';
import { type FirstSync, readFirstSync, readFirstSyncDue } from '../warehouse/first-sync.ts';
import { countLegacyDeleteChecksAsked } from '../warehouse/legacy-deletes.ts';
import { type PushBacklog, readPushBacklog } from '../warehouse/push-fetch-store.ts';
import {
  countPollable,
  countPollableUsers,
  type PollableUserCounts,
  readDueUsers,
  readRecentPollStats,
  type UserPollState,
} from '../warehouse/recent-polls.ts';
import { readStreamLastHeard } from '../warehouse/stream-bookkeeping.ts';
import {
  type BudgetPlan,
  budgetPlanInput,
  HOUR_MS,
  type PushShare,
  planRequestBudget,
  pushShare,
  type WorkKind,
} from './plan-request-budget.ts';
import { type RecentPollMode, recentPollMode } from './recent-poll.ts';

/**
 * An org's budget plan as of now: how many users are pollable and how many active (by aggregate,
 * countPollableUsers: no user row is read), push's durable queue (what the last hour spent and what
 * waits), the legacy delete checks of the last hour, whether the recent poll runs (when the primary
 * stream was last heard), and the planner over them. The records.recent tick, the push.drain job,
 * `status` and `/metrics` all read the plan here, so what they say is what the scheduler does. The
 * tick's slice of due users is read only when it asks (`readSlice`, only while the recent poll is
 * polling): by keyset, at most what the plan allows this tick.
 */
const DAY_MS = 86_400_000;

export interface OrgBudget {
  plan: BudgetPlan;
  /** The population by aggregate: pollable, active, and the active users' oldest and missing polls. */
  users: PollableUserCounts;
  /** Push's share (demand, cap, what the plan reserves) and its queue. */
  push: PushShare & { backlog: PushBacklog };
  /** Whether the recent poll runs now (stream-first: only while the stream is down) and over which days. */
  recentPoll: RecentPollMode;
  /** The org's primary stream (`stream.name`), and its first sync (src/budget/first-sync.ts) once begun. */
  streamName: string;
  firstSync: FirstSync | undefined;
  /**
   * The records.recent tick's slice (pickRecentPolls below) as of the plan's `now`: the gate's figures by
   * aggregate over recent polls, then at most `allowed` due users of each kind by keyset.
   */
  readSlice(options: { tickMs: number }): Promise<RecentSlice>;
  /** The first sync's slice of a tick (readFirstSyncSlice below), as of the plan's `now`. */
  readFirstSyncSlice(options: {
    tickMs: number;
    sync: Pick<FirstSync, 'streamName' | 'nextUid'>;
    windows: readonly DateWindow[];
  }): Promise<FirstSyncSlice>;
}

export async function readBudgetPlan(
  db: Kysely<Database>,
  config: Config,
  org: OrganizationConfig,
  now: number,
): Promise<OrgBudget> {
  const activeSince = new Date(now - config.budget.activeDays * DAY_MS);
  const users = await countPollableUsers(db, org.orgId, activeSince);
  const activeUsers = users.active;
  const backlog = await readPushBacklog(db, org.orgId, now);
  const legacyDeleteChecksLastHour = await countLegacyDeleteChecksAsked(
    db,
    org.orgId,
    new Date(now - HOUR_MS),
  );
  const counts = {
    activeUsers,
    dormantUsers: users.pollable - activeUsers,
    pushFetchesLastHour: backlog.claimedLastHour,
    pushFetchesPending: backlog.pendingRequests,
    legacyDeleteChecksLastHour,
  };
  const lastHeard = await readStreamLastHeard(db, org.orgId, org.stream.name);
  const firstSync = await readFirstSync(db, org.orgId, org.stream.name);
  const recentPoll = recentPollMode(config, org, lastHeard, now, Boolean(firstSync?.completedAt));
  const plan = planRequestBudget(budgetPlanInput(config, org, counts, recentPoll));
  const readSlice = (options: { tickMs: number }) =>
    readRecentSlice(db, org.orgId, activeSince, plan, { now, tickMs: options.tickMs });
  return {
    plan,
    users,
    push: { ...pushShare(config, org, counts), backlog },
    recentPoll,
    streamName: org.stream.name,
    firstSync,
    readSlice,
    readFirstSyncSlice: (options) => readFirstSyncSlice(db, org.orgId, plan, { now, ...options }),
  };
}

/**
 * The first sync's slice of a tick: as many users as the recent poll's gate allows (the same gate as
 * pickRecentPolls: the recent cap over a window of ticks, and no more in flight), the next ones in uid
 * order after the first sync's keyset that are not covered yet and have no recent poll in flight.
 * `reachedEnd`: fewer were found than allowed, so the keyset has passed the last user (the tick then
 * starts over from the first, for users whose poll was in flight or failed, and checks completion).
 */
export interface FirstSyncSlice {
  uids: string[];
  allowed: number;
  inFlight: number;
  reachedEnd: boolean;
}

export async function readFirstSyncSlice(
  db: Kysely<Database>,
  orgId: string,
  plan: BudgetPlan,
  options: {
    now: number;
    tickMs: number;
    sync: Pick<FirstSync, 'streamName' | 'nextUid'>;
    windows: readonly DateWindow[];
  },
): Promise<FirstSyncSlice> {
  const { now } = options;
  const times = recentPollTimes(plan, options.tickMs);
  const stats = await readRecentPollStats(db, orgId, { now, ...times });
  const { allowed } = recentPollGate(stats, plan, times, options);
  const uids = await readFirstSyncDue(db, {
    orgId,
    streamName: options.sync.streamName,
    windows: options.windows,
    afterUid: options.sync.nextUid,
    lostBefore: new Date(now - times.lostAfterMs),
    limit: allowed,
  });
  return { uids, allowed, inFlight: stats.inFlight, reachedEnd: uids.length < allowed };
}

/** The tick's slice: the gate from aggregates, then the oldest due candidates the gate allows. */
export async function readRecentSlice(
  db: Kysely<Database>,
  orgId: string,
  activeSince: Date,
  plan: BudgetPlan,
  options: { now: number; tickMs: number },
): Promise<RecentSlice> {
  const { now } = options;
  const times = recentPollTimes(plan, options.tickMs);
  const stats = await readRecentPollStats(db, orgId, { now, ...times });
  const gate = recentPollGate(stats, plan, times, options);
  const lostBefore = new Date(now - times.lostAfterMs);
  const polledBefore = (ageMs: number) => (Number.isFinite(ageMs) ? new Date(now - ageMs) : null);
  const active = await readDueUsers(db, orgId, {
    activeSince,
    active: true,
    polledBefore: polledBefore(gate.activeDueAgeMs),
    lostBefore,
    limit: gate.allowed,
  });
  const dormant = await readDueUsers(db, orgId, {
    activeSince,
    active: false,
    polledBefore: polledBefore(gate.dormantDueAgeMs),
    lostBefore,
    limit: gate.allowed - active.length,
  });
  return pickRecentPolls([...active, ...dormant], plan, options, stats);
}

/**
 * The most push may spend per hour, without reading every user or the queue: what push.drain gates on,
 * several times a minute. The same `pushShare` as readBudgetPlan's (its cap depends on how many users
 * there are, through users.sync's pages, not on which are active nor on push's own demand).
 */
export async function readPushCap(
  db: Kysely<Database>,
  config: Config,
  org: OrganizationConfig,
): Promise<number> {
  const counts = { activeUsers: await countPollable(db, org.orgId), dormantUsers: 0, pushFetchesLastHour: 0 };
  return pushShare(config, org, counts).capPerHour;
}

/**
 * Which users one records.recent tick enqueues (pure).
 *
 * The sweep is spread over its period instead of queued at once: a tick enqueues only what the plan's
 * recent-poll rate allows, and
 *
 * - due: a dormant user whose last completed poll is older than the plan's dormant period, an active one
 *   whose poll falls due within the time polls take from queue to completion (measured, + 2 ticks), or
 *   one never polled; a user whose poll is still in flight is not due. The lead polls active users a
 *   little more often than planned (Pa ÷ (Pa − lead)), taken from what dormant users get;
 * - order: active users first (they are the ones whose data is late), then the oldest poll first; their
 *   polls are queued at a more urgent priority too, so a backlog of dormant users never delays them;
 * - gate: over any sliding window of `WINDOW_TICKS` ticks, at most the recent cap's worth of users is
 *   enqueued (a tick: what the rate allows since the last enqueue), and no more are in flight than
 *   that: the recent poll never takes more than its share of the budget (so backfill keeps its
 *   minimum), and never queues more than the budget can serve.
 *
 * A poll in flight (queued after its last completion) that has not completed within one active period
 * is taken as lost and becomes due again; records.poll's deterministic id keeps it from being doubled
 * should it still wait in the queue.
 */
export const WINDOW_TICKS = 10;

export interface RecentSlice {
  /** Active users to enqueue (queued at FANOUT_PRIORITIES.activeRecentPoll, jobs/records-recent.ts, before the dormant ones). */
  active: string[];
  dormant: string[];
  due: { active: number; dormant: number };
  inFlight: number;
  /** Users the gate allowed this tick. */
  allowed: number;
}

/** The tick's time frames, from the plan and the tick length alone. */
export interface RecentPollTimes {
  windowMs: number;
  /** A poll queued longer ago than this and not completed is lost (no longer in flight). */
  lostAfterMs: number;
  /** Completed polls this recent tell the slowest queue-to-completion time. */
  horizonMs: number;
  /** Users the recent poll's share allows per window. */
  windowUsers: number;
}

export function recentPollTimes(plan: BudgetPlan, tickMs: number): RecentPollTimes {
  const windowMs = WINDOW_TICKS * tickMs;
  const activePeriod = plan.recent.activePeriodMs ?? Number.POSITIVE_INFINITY;
  const perUser = plan.recent.requestsPerUser;
  return {
    windowMs,
    lostAfterMs: Number.isFinite(activePeriod) ? Math.max(activePeriod, windowMs) : 6 * windowMs,
    horizonMs: Number.isFinite(activePeriod) ? activePeriod : windowMs,
    windowUsers: perUser > 0 ? Math.floor((plan.recentCapPerHour * windowMs) / HOUR_MS / perUser) : 0,
  };
}

/**
 * What the gate needs of the recent polls (of pollable users): the slowest queue-to-completion time of
 * the polls completed within the horizon, the polls in flight, those queued in the window, the last
 * enqueue. `recentPollStats` computes it from a whole list; the tick reads it by aggregate
 * (recent-polls.ts, `readRecentPollStats`, the same definitions in SQL).
 */
export interface RecentPollStats {
  slowestMs: number;
  inFlight: number;
  enqueuedInWindow: number;
  lastEnqueueAt: number | undefined;
}

const isInFlight = (u: UserPollState, now: number, lostAfterMs: number) => {
  const queued = u.enqueuedAt?.getTime();
  const polled = u.polledAt?.getTime();
  return queued !== undefined && (polled === undefined || polled < queued) && now - queued < lostAfterMs;
};

export function recentPollStats(
  users: readonly UserPollState[],
  times: RecentPollTimes,
  now: number,
): RecentPollStats {
  let slowestMs = 0;
  let inFlight = 0;
  let enqueuedInWindow = 0;
  let lastEnqueueAt: number | undefined;
  for (const u of users) {
    const queued = u.enqueuedAt?.getTime();
    const polled = u.polledAt?.getTime();
    if (queued !== undefined && polled !== undefined && polled >= queued && now - polled < times.horizonMs)
      slowestMs = Math.max(slowestMs, polled - queued);
    if (queued !== undefined && now - queued < times.windowMs) enqueuedInWindow++;
    if (queued !== undefined && (lastEnqueueAt === undefined || queued > lastEnqueueAt))
      lastEnqueueAt = queued;
    if (isInFlight(u, now, times.lostAfterMs)) inFlight++;
  }
  return { slowestMs, inFlight, enqueuedInWindow, lastEnqueueAt };
}

/** How many users this tick may queue, and how far ahead of falling due an active user is queued. */
export interface RecentPollGate {
  leadMs: number;
  allowed: number;
  /** A user is due when its last completed poll is at least this old (Infinity: only never-polled users). */
  activeDueAgeMs: number;
  dormantDueAgeMs: number;
}

export function recentPollGate(
  stats: RecentPollStats,
  plan: BudgetPlan,
  times: RecentPollTimes,
  options: { now: number; tickMs: number },
): RecentPollGate {
  const { now, tickMs } = options;
  const { windowMs, windowUsers } = times;
  // An active user is queued `lead` before it falls due, so its poll completes within the period: two
  // ticks (the granularity of queueing, and a tick that runs late) plus the slowest queue-to-completion
  // time of the polls completed in the last active period (measured: it grows with the queue depth, the
  // worker slots and the budget's pace), at most a window.
  const leadMs = 2 * tickMs + Math.min(stats.slowestMs, windowMs);
  // A tick takes what the rate allows since the last enqueue (so a tick that ran late catches up, and
  // there is no burst of a whole window at start), the window at most its share.
  const sinceLast =
    stats.lastEnqueueAt === undefined ? tickMs : Math.min(windowMs, Math.max(0, now - stats.lastEnqueueAt));
  const byRate = Math.ceil((windowUsers * sinceLast) / windowMs);
  const allowed = Math.max(
    0,
    Math.min(byRate, windowUsers - Math.max(stats.enqueuedInWindow, stats.inFlight)),
  );
  const activePeriod = plan.recent.activePeriodMs ?? Number.POSITIVE_INFINITY;
  return {
    leadMs,
    allowed,
    activeDueAgeMs: activePeriod - leadMs,
    dormantDueAgeMs: plan.recent.dormantPeriodMs ?? Number.POSITIVE_INFINITY,
  };
}

/**
 * The slice of `users` to queue this tick. With `stats` (the tick, reading by aggregate and keyset),
 * `users` are the due candidates only, oldest first, at most `allowed` of each kind
 * (recent-polls.ts, `readDueUsers`), and `due` counts among them; without, `users` are every
 * pollable user and the stats are computed from them.
 */
export function pickRecentPolls(
  users: readonly UserPollState[],
  plan: BudgetPlan,
  options: { now: number; tickMs: number },
  stats?: RecentPollStats,
): RecentSlice {
  const { now } = options;
  const times = recentPollTimes(plan, options.tickMs);
  const s = stats ?? recentPollStats(users, times, now);
  const gate = recentPollGate(s, plan, times, options);
  const activeDue: UserPollState[] = [];
  const dormantDue: UserPollState[] = [];
  for (const u of users) {
    if (isInFlight(u, now, times.lostAfterMs)) continue;
    const polled = u.polledAt?.getTime();
    const age = polled === undefined ? Number.POSITIVE_INFINITY : now - polled;
    if (u.active) {
      if (age >= gate.activeDueAgeMs) activeDue.push(u);
    } else if (age >= gate.dormantDueAgeMs) dormantDue.push(u);
  }
  const oldestFirst = (a: UserPollState, b: UserPollState) =>
    (a.polledAt?.getTime() ?? -1) - (b.polledAt?.getTime() ?? -1) ||
    (a.uid < b.uid ? -1 : a.uid > b.uid ? 1 : 0);
  activeDue.sort(oldestFirst);
  dormantDue.sort(oldestFirst);
  const { allowed } = gate;
  const active = activeDue.slice(0, allowed);
  const dormant = dormantDue.slice(0, allowed - active.length);
  return {
    active: active.map((u) => u.uid),
    dormant: dormant.map((u) => u.uid),
    due: { active: activeDue.length, dormant: dormantDue.length },
    inFlight: s.inFlight,
    allowed,
  };
}

/**
 * The plan said out loud (pure): what `status` (under each org as `budget`) and `/metrics` show of an
 * org's budget plan, plus the one thing measured rather than planned: how long ago the least recently
 * polled active user was polled (the sweep period actually achieved, once a first sweep is done).
 */

/** The plan's own figures as they are, and the recent poll's described for people. */
export interface BudgetStatus
  extends Pick<BudgetPlan, 'requestsPerHour' | 'usablePerHour' | 'perHour' | 'shares' | 'overcommitted'> {
  /**
   * Requests per hour the fleet's budget grants now (with Redis): the usable rate until the platform
   * answers 429, lowered then, climbing back on success (request-budget.ts).
   */
  grantedPerHour?: number;
  recentPoll: {
    /** 'fallback' (stream-first: polls only while the stream is down), 'always', or 'off'. */
    mode: RecentPollMode['mode'];
    /** Whether the tick queues polls now, why, and over how many days. */
    polling: boolean;
    /** The polls are the first sync's (src/budget/first-sync.ts). */
    firstSync: boolean;
    reason: string;
    days: number;
    /** Seconds since the org's primary stream was last heard from (null: never). */
    streamLastHeardSeconds: number | null;
    activeUsers: number;
    dormantUsers: number;
    requestsPerUser: number;
    /** Requests per hour the configured periods would need. */
    demandPerHour: number;
    /** Sweep periods in seconds: configured, and what the plan achieves (null: never). */
    configuredSeconds: number;
    plannedSeconds: number | null;
    configuredDormantSeconds: number;
    plannedDormantSeconds: number | null;
    /** Measured: age of the oldest completed poll among active users (null if one was never polled). */
    oldestActivePollSeconds: number | null;
    activeNeverPolled: number;
  };
  /** Push-triggered fetches: their share and the durable queue (validic_sync.push_fetches). */
  push?: {
    /** Requests per hour: the most push may take, what it asks (last hour + backlog), what is planned. */
    capPerHour: number;
    demandPerHour: number;
    plannedPerHour: number;
    /** Fetches waiting (of them due now), queued as jobs, failed (kept until pruned). */
    pending: number;
    due: number;
    queued: number;
    failed: number;
    /** Age of the oldest pending fetch's first item, seconds (null: nothing pending). */
    oldestPendingSeconds: number | null;
    /** Requests claimed and fetches finished in the last hour. */
    requestsLastHour: number;
    doneLastHour: number;
    /** Push requests refused (the cap, a refused timestamp, a replay, 413, the listener…) in the last hour, and in how many minutes. */
    refusedLastHour: number;
    refusedMinutesLastHour: number;
  };
}

const round = (n: number, digits = 1) => Math.round(n * 10 ** digits) / 10 ** digits;
const seconds = (ms: number | null) => (ms === null ? null : round(ms / 1000));

export function describeBudget(budget: OrgBudget, now: number): BudgetStatus {
  const { plan, users, push, recentPoll: mode } = budget;
  const { activeNeverPolled } = users;
  const oldest = Math.min(now, users.oldestActivePolledAt?.getTime() ?? now);
  const r = plan.recent;
  const map = <T>(o: Record<WorkKind, number>, f: (n: number) => T) =>
    Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)])) as Record<WorkKind, T>;
  return {
    requestsPerHour: plan.requestsPerHour,
    usablePerHour: round(plan.usablePerHour),
    perHour: map(plan.perHour, (n) => round(n)),
    shares: map(plan.shares, (n) => round(n, 3)),
    overcommitted: plan.overcommitted,
    recentPoll: {
      mode: mode.mode,
      polling: mode.polling,
      firstSync: mode.firstSync,
      reason: mode.reason,
      days: mode.days,
      streamLastHeardSeconds:
        mode.streamLastHeardAt === null
          ? null
          : seconds(Math.max(0, now - Date.parse(mode.streamLastHeardAt))),
      activeUsers: r.activeUsers,
      dormantUsers: r.dormantUsers,
      requestsPerUser: r.requestsPerUser,
      demandPerHour: round(r.demandPerHour),
      configuredSeconds: seconds(r.configuredActivePeriodMs)!,
      plannedSeconds: seconds(r.activePeriodMs),
      configuredDormantSeconds: seconds(r.configuredDormantPeriodMs)!,
      plannedDormantSeconds: seconds(r.dormantPeriodMs),
      oldestActivePollSeconds: users.active > 0 && activeNeverPolled === 0 ? seconds(now - oldest) : null,
      activeNeverPolled,
    },
    ...(push
      ? {
          push: {
            capPerHour: round(push.capPerHour),
            demandPerHour: round(push.demandPerHour),
            plannedPerHour: round(push.perHour),
            pending: push.backlog.pending,
            due: push.backlog.due,
            queued: push.backlog.queued,
            failed: push.backlog.failed,
            oldestPendingSeconds:
              push.backlog.oldestPendingAt === null
                ? null
                : seconds(Math.max(0, now - push.backlog.oldestPendingAt)),
            requestsLastHour: push.backlog.claimedLastHour,
            doneLastHour: push.backlog.doneLastHour,
            refusedLastHour: push.backlog.refusedLastHour,
            refusedMinutesLastHour: push.backlog.refusedMinutesLastHour,
          },
        }
      : {}),
  };
}
