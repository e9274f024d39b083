/**
 * Status and the scheduler's reads at 100,000 users: `status` (collectSyncStatus with the config, as the
 * CLI runs it) must answer in under 2 s, and the records.recent tick's reads (readBudgetPlan, plus the
 * due users' slice when the recent poll is polling) must cost a fraction of reading every pollable user
 * once, the limit measured in the same run on the same data (readUserPollStates: the whole population
 * with its activity and poll times). The plans of the heavy queries are printed (EXPLAIN ANALYZE,
 * BUFFERS), so a reader sees which index each one uses.
 *
 * The population: 100,000 users (`--quick`: 10,000), one in ten active (3 records in the last 7 days),
 * three in ten dormant with older records, the rest with none; recent_polls rows for 80 % of them
 * (active users polled within the hour, dormant ones within the day, 0.1 % in flight).
 * Run: `node bench/status-at-scale.ts [--quick]`.
 */
import { type CompiledQuery, Kysely, PostgresDialect, sql } from 'kysely';
import pg from 'pg';
import { readBudgetPlan } from '../src/budget/read-budget-plan.ts';
import { configSchema } from '../src/config/schema.ts';
import { collectSyncStatus } from '../src/metrics/sync-status.ts';
import type { Database } from '../src/warehouse/database.ts';
import { readUserPollStates } from '../src/warehouse/recent-polls.ts';
import { createTestDatabase } from '../test/helpers/pg.ts';
import { printFigure, quick, round, secondsSince } from './helpers/report.ts';

const USERS = quick ? 10_000 : 100_000;
const ORG = 'org-scale';
const STATUS_LIMIT_S = 2;
const TICK_TARGET = 0.5;
const DAY_MS = 86_400_000;
const TICK_MS = 60_000;
/** A token rate the population's configured periods fit in (active hourly, dormant daily). */
const RATE = quick ? 15_000 : 150_000;

const db = await createTestDatabase();
const warehouse = db.warehouse;
const now = Date.now();
const at = (msAgo: number) => new Date(now - msAgo).toISOString();

async function seed() {
  const first = new Date(now - 60 * DAY_MS);
  const firstMonth = `${first.getUTCFullYear()}-${String(first.getUTCMonth() + 1).padStart(2, '0')}-01`;
  const last = new Date(now + 31 * DAY_MS);
  const lastMonth = `${last.getUTCFullYear()}-${String(last.getUTCMonth() + 1).padStart(2, '0')}-01`;
  await sql`select validic_sync.create_month_partitions(${firstMonth}::date, ${lastMonth}::date)`.execute(
    warehouse.db,
  );
  await sql`
    insert into validic.users (org_id, uid, user_id, status, created_at, updated_at, raw, removed_at)
    select ${ORG}, 'u' || lpad(i::text, 6, '0'), 'id' || i, 'active', ${at(400 * DAY_MS)}::timestamptz,
      ${at(400 * DAY_MS)}::timestamptz, jsonb_build_object('uid', 'u' || lpad(i::text, 6, '0')),
      case when i % 100 = 99 then ${at(DAY_MS)}::timestamptz end
    from generate_series(0, ${USERS - 1}::int) i`.execute(warehouse.db);
  // Active (i % 10 = 0): 3 records in the last 6 days; dormant with history (i % 10 in 1..3): 2 records
  // 20 to 50 days ago; the rest none.
  await sql`
    insert into validic.records (org_id, id, type, checksum, uid, start_time, created_at, arrived_via, raw)
    select ${ORG}, 'r' || i || '-' || k, 'measurement', 'c', 'u' || lpad(i::text, 6, '0'),
      ${at(0)}::timestamptz - make_interval(days => case when i % 10 = 0 then 1 + (i + k) % 6 else 20 + (i + k) % 30 end),
      ${at(0)}::timestamptz, 'stream', '{}'::jsonb
    from generate_series(0, ${USERS - 1}::int) i, generate_series(1, 3) k
    where i % 10 = 0 or (i % 10 between 1 and 3 and k <= 2)`.execute(warehouse.db);
  // Polls: active users within the hour, dormant ones within the day; 0.1 % in flight; 20 % never polled.
  await sql`
    insert into validic_sync.recent_polls (org_id, uid, enqueued_at, polled_at)
    select ${ORG}, 'u' || lpad(i::text, 6, '0'),
      ${at(0)}::timestamptz - make_interval(secs => case when i % 10 = 0 then (i * 37) % 3600 else (i * 37) % 86400 end) - interval '20 seconds',
      case when i % 1000 = 7 then null
        else ${at(0)}::timestamptz - make_interval(secs => case when i % 10 = 0 then (i * 37) % 3600 else (i * 37) % 86400 end) end
    from generate_series(0, ${USERS - 1}::int) i
    where i % 5 <> 4`.execute(warehouse.db);
  await sql`vacuum analyze validic.users`.execute(warehouse.db);
  await sql`vacuum analyze validic.records`.execute(warehouse.db);
  await sql`vacuum analyze validic_sync.recent_polls`.execute(warehouse.db);
}

/** Median seconds of `runs` runs after one discarded. */
async function time(runs: number, fn: () => Promise<unknown>): Promise<number> {
  await fn();
  const times: number[] = [];
  for (let i = 0; i < runs; i++) {
    const started = process.hrtime.bigint();
    await fn();
    times.push(secondsSince(started));
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(times.length / 2)]!;
}

/** EXPLAIN (ANALYZE, BUFFERS) of a query as the application sent it (its text and parameters). */
async function explain(label: string, query: { sql: string; parameters: readonly unknown[] }) {
  const { rows } = await pool.query<{ 'QUERY PLAN': string }>(
    `explain (analyze, buffers, costs off) ${query.sql}`,
    query.parameters as unknown[],
  );
  console.log(`    plan ${label}:`);
  for (const r of rows) console.log(`      ${r['QUERY PLAN']}`);
}

/** A second handle on the database that records every query it runs, to explain them. */
const pool = new pg.Pool({ connectionString: db.url, max: 1 });
let captured: CompiledQuery[] = [];
const logged = new Kysely<Database>({
  dialect: new PostgresDialect({ pool }),
  log: (event) => {
    if (event.level === 'query') captured.push(event.query);
  },
});

try {
  const seeding = process.hrtime.bigint();
  await seed();
  const seedSeconds = secondsSince(seeding);
  const heard = configSchema.parse({ organizations: [{ orgId: ORG, token: 't', requestsPerHour: RATE }] });
  const always = configSchema.parse({
    sync: { recentPoll: 'always' },
    organizations: [{ orgId: ORG, token: 't', requestsPerHour: RATE }],
  });
  await sql`
    insert into validic_sync.checkpoints (org_id, key, value)
    values (${ORG}, 'stream:validic-sync:0', ${JSON.stringify({ lastLiveAt: new Date(now).toISOString() })}::jsonb)
    on conflict do nothing`.execute(warehouse.db);
  const activeSince = new Date(now - heard.budget.activeDays * DAY_MS);

  const fullRead = await time(3, () => readUserPollStates(warehouse.db, ORG, activeSince));
  const planOff = await time(3, () => readBudgetPlan(warehouse.db, heard, heard.organizations[0]!, now));
  const planOn = await time(3, () => readBudgetPlan(warehouse.db, always, always.organizations[0]!, now));
  const tickOn = await time(3, async () => {
    const budget = await readBudgetPlan(warehouse.db, always, always.organizations[0]!, now);
    return budget.readSlice({ tickMs: TICK_MS });
  });
  const status = await time(3, () =>
    collectSyncStatus({ warehouse, orgIds: [ORG], config: heard, now: new Date(now) }),
  );
  const budget = await readBudgetPlan(warehouse.db, always, always.organizations[0]!, now);
  const slice = await budget.readSlice({ tickMs: TICK_MS });

  printFigure({
    name: 'status-at-scale',
    value: round(status / STATUS_LIMIT_S),
    target: '< 1',
    ok: status < STATUS_LIMIT_S,
    raw: { users: USERS, status_s: round(status, 3), limit_s: STATUS_LIMIT_S, seed_s: round(seedSeconds, 1) },
  });
  const tick = Math.max(planOff, tickOn);
  printFigure({
    name: 'tick-reads-vs-full-read',
    value: round(tick / fullRead),
    target: `≤ ${TICK_TARGET}`,
    ok: tick / fullRead <= TICK_TARGET,
    raw: {
      full_read_s: round(fullRead, 3),
      plan_not_polling_s: round(planOff, 3),
      plan_polling_s: round(planOn, 3),
      tick_polling_s: round(tickOn, 3),
      plan: budget.plan.recent,
      slice: {
        active: slice.active.length,
        dormant: slice.dormant.length,
        allowed: slice.allowed,
        inFlight: slice.inFlight,
      },
    },
  });

  // The plans: the whole-population read the tick did before (the limit), then every query of the
  // plan and of the tick's slice as they run now.
  captured = [];
  await readUserPollStates(logged, ORG, activeSince);
  await explain('limit: readUserPollStates (every pollable user)', captured[0]!);
  captured = [];
  await (await readBudgetPlan(logged, always, always.organizations[0]!, now)).readSlice({ tickMs: TICK_MS });
  for (const [i, q] of captured.entries()) {
    if (!/validic\.users|recent_polls/.test(q.sql)) continue;
    const first = q.sql.replace(/\s+/g, ' ').trim().slice(0, 90);
    await explain(`tick query ${i + 1} (${first}…)`, q);
  }
} finally {
  await logged.destroy();
  await db.drop();
}
