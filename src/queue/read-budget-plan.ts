/**
 * An org's budget plan as of now: the pollable users (selectUsersToPoll), how many are active, the push
 * fetches and legacy delete checks of the last hour, and the planner over them. The records.recent tick,
 * `status` and `/metrics` all read the plan here, so what they say is what the scheduler does.
 */
import { type Kysely, sql } from 'kysely';
import type { Config, OrganizationConfig } from '../config/schema.ts';
import type { Database } from '../warehouse/database.ts';
import { countLegacyDeleteChecksAsked } from '../warehouse/legacy-delete-checks.ts';
import { type PollableUser, selectUsersToPoll } from '../warehouse/select-users-to-poll.ts';
import { budgetPlanInput } from './budget-plan-input.ts';
import { type BudgetPlan, HOUR_MS, planRequestBudget } from './plan-request-budget.ts';

const DAY_MS = 86_400_000;

export interface OrgBudget {
  plan: BudgetPlan;
  users: PollableUser[];
}

export async function readBudgetPlan(
  db: Kysely<Database>,
  config: Config,
  org: OrganizationConfig,
  now: number,
): Promise<OrgBudget> {
  const users = await selectUsersToPoll(db, org.orgId, new Date(now - config.budget.activeDays * DAY_MS));
  const activeUsers = users.filter((u) => u.active).length;
  const pushes = await sql<{ n: number }>`
    select coalesce(sum(enqueued), 0)::int as n from validic_sync.push_notifications
    where org_id = ${org.orgId} and received_at > ${new Date(now - HOUR_MS)}`.execute(db);
  const legacyDeleteChecksLastHour = await countLegacyDeleteChecksAsked(
    db,
    org.orgId,
    new Date(now - HOUR_MS),
  );
  const plan = planRequestBudget(
    budgetPlanInput(config, org, {
      activeUsers,
      dormantUsers: users.length - activeUsers,
      pushFetchesLastHour: pushes.rows[0]?.n ?? 0,
      legacyDeleteChecksLastHour,
    }),
  );
  return { plan, users };
}
