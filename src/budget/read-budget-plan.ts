/**
 * An org's budget plan as of now: how many users are pollable and how many active (by aggregate,
 * countPollableUsers: no user row is read), push's durable queue (what the last hour spent and what
 * waits), the legacy delete checks of the last hour, whether the recent poll runs (when the primary
 * stream was last heard), and the planner over them. The records.recent tick, the push.drain job,
 * `status` and `/metrics` all read the plan here, so what they say is what the scheduler does. The
 * tick's slice of due users is read only when it asks (`readSlice`, only while the recent poll is
 * polling): by keyset, at most what the plan allows this tick.
 */
import { type Kysely, sql } from 'kysely';
import type { Config, OrganizationConfig } from '../config/schema.ts';
import type { Database } from '../warehouse/database.ts';
import { countLegacyDeleteChecksAsked } from '../warehouse/legacy-delete-checks.ts';
import { type PushBacklog, readPushBacklog } from '../warehouse/push-fetch-store.ts';
import {
  countPollableUsers,
  isPollable,
  type PollableUserCounts,
  readDueUsers,
  readRecentPollStats,
} from '../warehouse/recent-polls.ts';
import { readStreamLastHeard } from '../warehouse/stream-last-heard.ts';
import { budgetPlanInput, type PushShare, pushShare } from './budget-plan-input.ts';
import { pickRecentPolls, type RecentSlice, recentPollGate, recentPollTimes } from './pick-recent-polls.ts';
import { type BudgetPlan, planRequestBudget } from './plan-request-budget.ts';
import { type RecentPollMode, recentPollMode } from './recent-poll-mode.ts';

const DAY_MS = 86_400_000;

export interface OrgBudget {
  plan: BudgetPlan;
  /** The population by aggregate: pollable, active, and the active users' oldest and missing polls. */
  users: PollableUserCounts;
  /** Push's share (demand, cap, what the plan reserves) and its queue. */
  push: PushShare & { backlog: PushBacklog };
  /** Whether the recent poll runs now (stream-first: only while the stream is down) and over which days. */
  recentPoll: RecentPollMode;
  /**
   * The records.recent tick's slice (pick-recent-polls.ts) as of the plan's `now`: the gate's figures by
   * aggregate over recent polls, then at most `allowed` due users of each kind by keyset.
   */
  readSlice(options: { tickMs: number }): Promise<RecentSlice>;
}

const HOUR_MS = 3_600_000;

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
    pushFetchesPending: backlog.pending,
    legacyDeleteChecksLastHour,
  };
  const lastHeard = await readStreamLastHeard(db, org.orgId, org.stream.name);
  const recentPoll = recentPollMode(config, org, lastHeard, now);
  const plan = planRequestBudget(budgetPlanInput(config, org, counts, recentPoll));
  const readSlice = (options: { tickMs: number }) =>
    readRecentSlice(db, org.orgId, activeSince, plan, { now, tickMs: options.tickMs });
  return { plan, users, push: { ...pushShare(config, org, counts), backlog }, recentPoll, readSlice };
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
  const users = await sql<{ n: number }>`
    select count(*)::int as n from validic.users u where u.org_id = ${org.orgId} and ${isPollable('u')}`.execute(
    db,
  );
  const counts = { activeUsers: users.rows[0]?.n ?? 0, dormantUsers: 0, pushFetchesLastHour: 0 };
  return pushShare(config, org, counts).capPerHour;
}
