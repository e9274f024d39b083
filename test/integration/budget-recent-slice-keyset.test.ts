/**
 * The tick's reads by aggregate and keyset (readRecentSlice, countPollableUsers) choose exactly what the
 * pure picker chooses over every pollable user (readUserPollStates): the same users in the same order,
 * the same gate, over a population in every state (active or dormant, never polled, polled long ago or
 * just now, in flight, lost, removed) and at several moments and budgets.
 */
import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { pickRecentPolls, readBudgetPlan } from '../../src/budget/read-budget-plan.ts';
import { configSchema } from '../../src/config/schema.ts';
import { countPollableUsers, readUserPollStates } from '../../src/warehouse/recent-polls.ts';
import { useTestDatabase } from '../helpers/use-test-database.ts';

const ORG = 'org-keyset';
const NOW = Date.parse('2026-11-27T12:00:00Z');
const MIN = 60_000;
const t = useTestDatabase();

async function seed() {
  // 400 users: i % 4 = 0 active (a record 2 days ago); every 37th removed; polls in many states.
  await sql`
    insert into validic.users (org_id, uid, raw, removed_at)
    select ${ORG}, 'u' || lpad(i::text, 4, '0'), '{}'::jsonb,
      case when i % 37 = 5 then ${new Date(NOW - 60 * MIN)}::timestamptz end
    from generate_series(0, 399) i`.execute(t.warehouse.db);
  await sql`
    insert into validic.records (org_id, id, type, checksum, uid, start_time, created_at, arrived_via)
    select ${ORG}, 'r' || i, 'measurement', 'c', 'u' || lpad(i::text, 4, '0'),
      ${new Date(NOW)}::timestamptz - case when i % 4 = 0 then interval '2 days' else interval '20 days' end,
      ${new Date(NOW)}::timestamptz, 'stream'
    from generate_series(0, 399) i where i % 4 = 0 or i % 3 = 0`.execute(t.warehouse.db);
  // i % 9: 0 no row; 1 queued never completed, long ago (lost); 2 queued never completed, just now
  // (in flight); 3 queued after the last completion, recently (in flight); otherwise completed
  // (i * 7919) % 3000 minutes ago (ties every few users), queued a little before it.
  await sql`
    insert into validic_sync.recent_polls (org_id, uid, enqueued_at, polled_at)
    select ${ORG}, 'u' || lpad(i::text, 4, '0'),
      case i % 9
        when 1 then ${new Date(NOW - 5000 * MIN)}::timestamptz
        when 2 then ${new Date(NOW - 2 * MIN)}::timestamptz
        when 3 then ${new Date(NOW - 3 * MIN)}::timestamptz
        else ${new Date(NOW)}::timestamptz - make_interval(mins => (i * 7919) % 3000 + (i % 5))
      end,
      case i % 9
        when 1 then null
        when 2 then null
        when 3 then ${new Date(NOW - 90 * MIN)}::timestamptz
        else ${new Date(NOW)}::timestamptz - make_interval(mins => ((i * 7919) % 3000) / 10 * 10)
      end
    from generate_series(0, 399) i where i % 9 <> 0`.execute(t.warehouse.db);
}

describe('the tick reads by aggregate and keyset what the picker would choose from everyone', () => {
  it('counts, gate and slice match the whole-population read', async () => {
    await seed();
    const picked = { active: 0, dormant: 0, inFlight: 0, limited: 0 };
    for (const requestsPerHour of [400, 3000, 40_000]) {
      for (const recentPollMinutes of [60, 600]) {
        const config = configSchema.parse({
          sync: { recentPoll: 'always' },
          schedules: { recentPollMinutes },
          organizations: [{ orgId: ORG, token: 't', requestsPerHour }],
        });
        const org = config.organizations[0]!;
        for (const now of [NOW, NOW + 7 * MIN, NOW + 600 * MIN]) {
          const budget = await readBudgetPlan(t.warehouse.db, config, org, now);
          const activeSince = new Date(now - config.budget.activeDays * 86_400_000);
          const everyone = await readUserPollStates(t.warehouse.db, ORG, activeSince);
          const active = everyone.filter((u) => u.active);
          expect(budget.users).toEqual(await countPollableUsers(t.warehouse.db, ORG, activeSince));
          expect(budget.users.pollable).toBe(everyone.length);
          expect(budget.users.active).toBe(active.length);
          expect(budget.users.activeNeverPolled).toBe(active.filter((u) => !u.polledAt).length);
          const oldest = Math.min(...active.filter((u) => u.polledAt).map((u) => u.polledAt!.getTime()));
          expect(budget.users.oldestActivePolledAt?.getTime()).toBe(oldest);
          for (const tickMs of [MIN, 10 * MIN]) {
            const whole = pickRecentPolls(everyone, budget.plan, { now, tickMs });
            const slice = await budget.readSlice({ tickMs });
            const label = `${requestsPerHour}/h, ${recentPollMinutes} min, +${(now - NOW) / MIN} min, tick ${tickMs / MIN} min`;
            expect({ ...slice, due: undefined }, label).toEqual({ ...whole, due: undefined });
            expect(slice.due.active, label).toBeLessThanOrEqual(whole.due.active);
            picked.active += slice.active.length;
            picked.dormant += slice.dormant.length;
            picked.inFlight += slice.inFlight;
            if (whole.due.active + whole.due.dormant > slice.allowed && slice.allowed > 0) picked.limited++;
          }
        }
      }
    }
    // The cases were not empty: both kinds were picked, some polls were in flight, some gates limited.
    expect(picked.active).toBeGreaterThan(0);
    expect(picked.dormant).toBeGreaterThan(0);
    expect(picked.inFlight).toBeGreaterThan(0);
    expect(picked.limited).toBeGreaterThan(0);
  });
});
