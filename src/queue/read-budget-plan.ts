/**
 * An org's budget plan as of now: the pollable users (selectUsersToPoll), how many are active, push's
 * durable queue (what the last hour spent and what waits), the legacy delete checks of the last hour,
 * whether the recent poll runs (when the primary stream was last heard), and the planner over them. The records.recent tick, the push.drain job, `status` and `/metrics` all
 * read the plan here, so what they say is what the scheduler does.
 */
import { type Kysely, sql } from 'kysely';
import type { Config, OrganizationConfig } from '../config/schema.ts';
import { type PushBacklog, readPushBacklog } from '../push/push-fetch-store.ts';
import type { Database } from '../warehouse/database.ts';
import { countLegacyDeleteChecksAsked } from '../warehouse/legacy-delete-checks.ts';
import { pollableUser } from '../warehouse/pollable-users.ts';
import { type PollableUser, selectUsersToPoll } from '../warehouse/select-users-to-poll.ts';
import { readStreamLastHeard } from '../warehouse/stream-last-heard.ts';
import { budgetPlanInput, type PushShare, pushShare } from './budget-plan-input.ts';
import { type BudgetPlan, planRequestBudget } from './plan-request-budget.ts';
import { type RecentPollMode, recentPollMode } from './recent-poll-mode.ts';

const DAY_MS = 86_400_000;

export interface OrgBudget {
  plan: BudgetPlan;
  users: PollableUser[];
  /** Push's share (demand, cap, what the plan reserves) and its queue. */
  push: PushShare & { backlog: PushBacklog };
  /** Whether the recent poll runs now (stream-first: only while the stream is down) and over which days. */
  recentPoll: RecentPollMode;
}

const HOUR_MS = 3_600_000;

export async function readBudgetPlan(
  db: Kysely<Database>,
  config: Config,
  org: OrganizationConfig,
  now: number,
): Promise<OrgBudget> {
  const users = await selectUsersToPoll(db, org.orgId, new Date(now - config.budget.activeDays * DAY_MS));
  const activeUsers = users.filter((u) => u.active).length;
  const backlog = await readPushBacklog(db, org.orgId, now);
  const legacyDeleteChecksLastHour = await countLegacyDeleteChecksAsked(
    db,
    org.orgId,
    new Date(now - HOUR_MS),
  );
  const counts = {
    activeUsers,
    dormantUsers: users.length - activeUsers,
    pushFetchesLastHour: backlog.claimedLastHour,
    pushFetchesPending: backlog.pending,
    legacyDeleteChecksLastHour,
  };
  const lastHeard = await readStreamLastHeard(db, org.orgId, org.stream.name);
  const recentPoll = recentPollMode(config, org, lastHeard, now);
  const plan = planRequestBudget(budgetPlanInput(config, org, counts, recentPoll));
  return { plan, users, push: { ...pushShare(config, org, counts), backlog }, recentPoll };
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
    select count(*)::int as n from validic.users u where u.org_id = ${org.orgId} and ${pollableUser('u')}`.execute(
    db,
  );
  const counts = { activeUsers: users.rows[0]?.n ?? 0, dormantUsers: 0, pushFetchesLastHour: 0 };
  return pushShare(config, org, counts).capPerHour;
}
